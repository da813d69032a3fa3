// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-12,  18, -27, -21,  44], [ 14,  16,   5,  35,   7], [-22, -24,  49, -37,  48], [  7, -18,  20,  32,  43]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[ 32, -12,  -3,  18,  15], [  7,  40, -15,  11,  -9], [ 23,  43,  16,  28,  36], [ 44, -44,   1, -32,  47]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[ 32,  18,  -3,  18,  44], [ 14,  40,   5,  35,   7], [ 23,  43,  49,  28,  48], [ 44, -18,  20,  32,  47]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
