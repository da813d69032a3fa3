// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<1x6xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<1x6xf32>
    %r = "tosa.reduce_product"(%in) <{axis = 0 : i32}> : (tensor<5x6xf32>) -> tensor<1x6xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<1x6xf32>, tensor<1x6xf32>) -> ()
    return %r : tensor<1x6xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xA315B13FE031803F8DDEBC3F5897243F61C8383F363D7C3FFA4C843F84BEBC3FA74A1E3F9D64163F0FD3543F4F49823F28DC983F33583E3F0A01613F35FE7D3F0A19B13F41CB133F7FE3853FC121203F4228763F52ADB63FA953033F9546083F9560163F0CAA283F6611953F32E2B33F040B543F0AEB8E3F"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<1x6xf32> {
    %c = "tosa.const"() <{values = dense<"0x1D4E863FBFB1E73E0BE2653F6869403F8A9FB43EFF32B03E"> : tensor<1x6xf32>}> : () -> tensor<1x6xf32>
    return %c : tensor<1x6xf32>
  }
}
