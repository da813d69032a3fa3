// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf16>, tensor<1x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>, tensor<1x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x88BF453DCB40CDBC9A3931AD80AEB7BEDF3E5D3E98BF5639573FC43FE4402429A03C6BBC31BB5040"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    %c1 = "tosa.const"() <{values = dense<"0x0EC12FBE6A3594BCC140"> : tensor<1x5xf16>}> : () -> tensor<1x5xf16>
    return %c0, %c1 : tensor<4x5xf16>, tensor<1x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x2839BA411E4020ABB5BEE440C73D09C0BA414ABA08396D40FC3D2C42602C23416841C6BDDC3310B3"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
