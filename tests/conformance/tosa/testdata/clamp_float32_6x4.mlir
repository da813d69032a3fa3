// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<6x4xf32>) {
    %in = call @inputs() : () -> (tensor<6x4xf32>)
    %want = call @expected() : () -> tensor<6x4xf32>
    %r = "tosa.clamp"(%in) <{min_val = 0.0 : f32, max_val = 6.0 : f32}> : (tensor<6x4xf32>) -> tensor<6x4xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<6x4xf32>, tensor<6x4xf32>) -> ()
    return %r : tensor<6x4xf32>
  }
  func.func private @inputs() -> (tensor<6x4xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xBB74E93F5F128D3F2192F540470280BFDC76FEC0FD53C8C05A81FAC071C3B9406B449740B412D340B2AB1640CCBEFD3F29BC3BC0C3D80FC140B645C077F784C07AF686BF83433E4092B5F3BF4C03884053E3034105C2C940E01519C0519C0440"> : tensor<6x4xf32>}> : () -> tensor<6x4xf32>
    return %c0 : tensor<6x4xf32>
  }
  func.func private @expected() -> tensor<6x4xf32> {
    %c = "tosa.const"() <{values = dense<"0xBB74E93F5F128D3F0000C0400000000000000000000000000000000071C3B9406B4497400000C040B2AB1640CCBEFD3F000000000000000000000000000000000000000083433E40000000004C0388400000C0400000C04000000000519C0440"> : tensor<6x4xf32>}> : () -> tensor<6x4xf32>
    return %c : tensor<6x4xf32>
  }
}
