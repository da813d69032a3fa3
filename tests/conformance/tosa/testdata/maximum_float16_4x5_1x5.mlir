// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf16>, tensor<1x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>, tensor<1x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0xBCBA5EBD1041AA351F3A19407FC06DBE1FB8063F53BE21BE85399C418DBC85412BC07038C7C1C79A"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    %c1 = "tosa.const"() <{values = dense<"0x834150BE8D40E1C1EDC1"> : tensor<1x5xf16>}> : () -> tensor<1x5xf16>
    return %c0, %c1 : tensor<4x5xf16>, tensor<1x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x83415EBD1041AA351F3A834150BE8D401FB8063F834121BE8D409C418DBC854150BE8D40C7C1C79A"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
