// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<1x4x3xi32>) {
    %in:2 = call @inputs() : () -> (tensor<1x4x8xi8>, tensor<1x8x3xi8>)
    %want = call @expected() : () -> tensor<1x4x3xi32>
    %za = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %zb = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %r = "tosa.matmul"(%in#0, %in#1, %za, %zb) : (tensor<1x4x8xi8>, tensor<1x8x3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x3xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<1x4x3xi32>, tensor<1x4x3xi32>) -> ()
    return %r : tensor<1x4x3xi32>
  }
  func.func private @inputs() -> (tensor<1x4x8xi8>, tensor<1x8x3xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[[-4,  7, -2, -1,  1, -6, -7, -7],  [-7,  7, -1,  4, -7,  2, -8,  0],  [ 4,  1, -8, -2,  3, -5,  2, -4],  [-3, -3, -4, -2,  7,  7,  1, -3]]]> : tensor<1x4x8xi8>}> : () -> tensor<1x4x8xi8>
    %c1 = "tosa.const"() <{values = dense<[[[-7,  7, -3],  [-4,  5, -7],  [-4,  5, -8],  [ 6,  6,  4],  [-3, -8, -2],  [ 7, -3,  5],  [ 5, -3, -4],  [-8, -3,  3]]]> : tensor<1x8x3xi8>}> : () -> tensor<1x8x3xi8>
    return %c0, %c1 : tensor<1x4x8xi8>, tensor<1x8x3xi8>
  }
  func.func private @expected() -> tensor<1x4x3xi32> {
    %c = "tosa.const"() <{values = dense<[[[ -22,   43,  -50],  [  44,   79,   52],  [ -14,  -22,  -14],  [  94, -139,   62]]]> : tensor<1x4x3xi32>}> : () -> tensor<1x4x3xi32>
    return %c : tensor<1x4x3xi32>
  }
}
