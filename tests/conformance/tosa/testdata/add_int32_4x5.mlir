// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[ 38,  -3, -28,  -8, -24], [ 18, -27,  36,  29,  25], [ -4, -10,  -2,  20, -50], [ -8, -49,   1, -41,  13]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[ 35,  43,   4,  30,  -1], [-41,  49, -24,  48, -38], [-17, -23, -33, -31,  -9], [-46, -10,  36, -37,  32]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[ 73,  40, -24,  22, -25], [-23,  22,  12,  77, -13], [-21, -33, -35, -11, -59], [-54, -59,  37, -78,  45]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
