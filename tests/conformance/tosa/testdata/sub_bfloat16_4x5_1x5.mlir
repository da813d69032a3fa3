// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xbf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xbf16>, tensor<1x5xbf16>)
    %want = call @expected() : () -> tensor<4x5xbf16>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xbf16>, tensor<1x5xbf16>) -> tensor<4x5xbf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xbf16>, tensor<4x5xbf16>) -> ()
    return %r : tensor<4x5xbf16>
  }
  func.func private @inputs() -> (tensor<4x5xbf16>, tensor<1x5xbf16>) {
    %c0 = "tosa.const"() <{values = dense<"0xDBBF01C06D3E284040BFA23F2F4082BE20405C3ED33FFDBFC1BF0EC0963E32C01E40E93FED3F83BF"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    %c1 = "tosa.const"() <{values = dense<"0xBB3C513FFABF014031C0"> : tensor<1x5xbf16>}> : () -> tensor<1x5xbf16>
    return %c0, %c1 : tensor<4x5xbf16>, tensor<1x5xbf16>
  }
  func.func private @expected() -> tensor<4x5xbf16> {
    %c = "tosa.const"() <{values = dense<"0xDEBF35C00C401C3F01409F3FF63FDA3FF83E3F40D03F33C0E43E88C0444033C0D43F724028BEDF3F"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    return %c : tensor<4x5xbf16>
  }
}
