// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<1x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<1x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xC2E868BF52F5EB3F07CDE53F7C7030C0605E04C0E2BFC53F3489CFBE87BF31C03A2D42BFC14930C03410043ECE2E2F40EE443640B23819C0ECF5004094A8D23EEAC5BDBFC788C0BD0A59DD3F17733340"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0xC01970BF9524B6BDEDABD1BFA3A7304087D58D3F"> : tensor<1x5xf32>}> : () -> tensor<1x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<1x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xC2E868BF52F5EB3F07CDE53FA3A7304087D58D3FE2BFC53F9524B6BDEDABD1BFA3A7304087D58D3F3410043ECE2E2F40EE443640A3A73040ECF5004094A8D23E9524B6BDC788C0BDA3A7304017733340"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
