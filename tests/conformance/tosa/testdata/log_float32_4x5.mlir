// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.log"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x98289E4042921740534DAA3F39CF4F3FDFCA95404C1CD03F02A0DE3F5E2E9D40FFA44940CBDE21404E7A8240B0B329400482863FDE600E408D504440CC831540BAD3823F1DE59F3EBFC38D403C52F43F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xC086CC3F62B75C3FBC32923EA98F55BEE591C53F1EDAF83E77AF0D3F9CBBCB3F52E5923FA88B6D3F56E6B33F1BA4793F7A214B3DECB24C3F8B778F3F1E38593F69F6B23CA4F794BFF384BE3FFC7D253F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
