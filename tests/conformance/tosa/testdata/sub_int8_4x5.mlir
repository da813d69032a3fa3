// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi8>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi8>, tensor<4x5xi8>)
    %want = call @expected() : () -> tensor<4x5xi8>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xi8>, tensor<4x5xi8>) -> tensor<4x5xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi8>, tensor<4x5xi8>) -> ()
    return %r : tensor<4x5xi8>
  }
  func.func private @inputs() -> (tensor<4x5xi8>, tensor<4x5xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[-15, -27,  30,   6, -29], [ 17, -17,   3,  30,  -5], [-50,  47,  15,  29,  46], [ 47, -16, -24, -18,   0]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    %c1 = "tosa.const"() <{values = dense<[[ 35, -17, -22,  44, -39], [ -3, -44, -44,  44,   3], [-46,  46,  11,  47, -23], [  9,  47, -38,  32,  37]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c0, %c1 : tensor<4x5xi8>, tensor<4x5xi8>
  }
  func.func private @expected() -> tensor<4x5xi8> {
    %c = "tosa.const"() <{values = dense<[[-50, -10,  52, -38,  10], [ 20,  27,  47, -14,  -8], [ -4,   1,   4, -18,  69], [ 38, -63,  14, -50, -37]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c : tensor<4x5xi8>
  }
}
