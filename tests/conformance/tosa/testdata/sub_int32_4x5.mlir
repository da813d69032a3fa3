// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-48,  -5, -15, -37,   9], [ 24, -22,  31,  -6, -50], [-34, -11,   0,  12, -32], [-12, -42,  -7,  45,  14]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[-36, -22,  26, -23, -35], [ 34, -42, -18, -41,  31], [ 14,  20,  30, -46, -47], [-35, -35, -46,  23, -46]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[-12,  17, -41, -14,  44], [-10,  20,  49,  35, -81], [-48, -31, -30,  58,  15], [ 23,  -7,  39,  22,  60]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
