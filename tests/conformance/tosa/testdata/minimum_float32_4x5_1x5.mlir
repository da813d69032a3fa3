// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<1x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<1x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xB09EF2BC284F21401803033EF575DB3F0A42CD3FE4D21CC065E03A400227863FC8DA37C02F521CBF5A7810BD6239C4BF6B8509C052592CC01B4FC53F66EF243F8677F93ECF68023F8E6B2340F2E280BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x3B4D4DBF8A77C83E5230F7BFFCD3ECBFE3940F40"> : tensor<1x5xf32>}> : () -> tensor<1x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<1x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x3B4D4DBF8A77C83E5230F7BFFCD3ECBF0A42CD3FE4D21CC08A77C83E5230F7BFC8DA37C02F521CBF3B4D4DBF6239C4BF6B8509C052592CC01B4FC53F3B4D4DBF8A77C83E5230F7BFFCD3ECBFF2E280BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
