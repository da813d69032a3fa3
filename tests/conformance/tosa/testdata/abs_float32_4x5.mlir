// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.abs"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xF24A4C3E2DF83940380A713FA30638C053CCF9BEECAFD9BF8D3E99BF463A07C0495F0FBFC42F1B407D2CEE3FDDDEB8BF67450B40F436CF3F2BFD603F91032140A9EBA13F60D71A40F66B19C03AB7BB3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xF24A4C3E2DF83940380A713FA306384053CCF93EECAFD93F8D3E993F463A0740495F0F3FC42F1B407D2CEE3FDDDEB83F67450B40F436CF3F2BFD603F91032140A9EBA13F60D71A40F66B19403AB7BB3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
