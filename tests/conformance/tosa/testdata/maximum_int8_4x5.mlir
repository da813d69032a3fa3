// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi8>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi8>, tensor<4x5xi8>)
    %want = call @expected() : () -> tensor<4x5xi8>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xi8>, tensor<4x5xi8>) -> tensor<4x5xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi8>, tensor<4x5xi8>) -> ()
    return %r : tensor<4x5xi8>
  }
  func.func private @inputs() -> (tensor<4x5xi8>, tensor<4x5xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[ 17, -16, -31,   7,   4], [-35,  48, -25,  47, -28], [ 41,  38,  31, -36,  28], [-31, -20,  -9,  27,  37]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    %c1 = "tosa.const"() <{values = dense<[[ 49,  23,  26,  37,  -2], [-43,   6,  -1, -16, -38], [-27,   1,   1,  45, -35], [ 11, -14, -44,  -3,  -3]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c0, %c1 : tensor<4x5xi8>, tensor<4x5xi8>
  }
  func.func private @expected() -> tensor<4x5xi8> {
    %c = "tosa.const"() <{values = dense<[[ 49,  23,  26,  37,   4], [-35,  48,  -1,  47, -28], [ 41,  38,  31,  45,  28], [ 11, -14,  -9,  27,  37]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c : tensor<4x5xi8>
  }
}
