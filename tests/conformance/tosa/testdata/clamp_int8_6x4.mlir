// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<6x4xi8>) {
    %in = call @inputs() : () -> (tensor<6x4xi8>)
    %want = call @expected() : () -> tensor<6x4xi8>
    %r = "tosa.clamp"(%in) <{min_val = -10 : i8, max_val = 20 : i8}> : (tensor<6x4xi8>) -> tensor<6x4xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<6x4xi8>, tensor<6x4xi8>) -> ()
    return %r : tensor<6x4xi8>
  }
  func.func private @inputs() -> (tensor<6x4xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[  51,  -45,   -1, -119], [ -34,  -56,  103,  103], [ -10,  126,   43,   61], [  57,  -50,  -89,  -71], [  21,   99, -102,    9], [  45, -113,   43,  -74]]> : tensor<6x4xi8>}> : () -> tensor<6x4xi8>
    return %c0 : tensor<6x4xi8>
  }
  func.func private @expected() -> tensor<6x4xi8> {
    %c = "tosa.const"() <{values = dense<[[ 20, -10,  -1, -10], [-10, -10,  20,  20], [-10,  20,  20,  20], [ 20, -10, -10, -10], [ 20,  20, -10,   9], [ 20, -10,  20, -10]]> : tensor<6x4xi8>}> : () -> tensor<6x4xi8>
    return %c : tensor<6x4xi8>
  }
}
