// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf16>, tensor<1x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>, tensor<1x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0xA14196BC803F163F4941253ED0C016B4733DFF3B8D39C4412539E640B5BD862E0CC1052CC63D54C0"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    %c1 = "tosa.const"() <{values = dense<"0x69343FC0C9C018360C40"> : tensor<1x5xf16>}> : () -> tensor<1x5xf16>
    return %c0, %c1 : tensor<4x5xf16>, tensor<1x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x69343FC0C9C018360C406934D0C0C9C01836FF3B69343FC0C9C01836B5BD862E0CC1C9C0183654C0"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
