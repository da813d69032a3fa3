// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf16>, tensor<1x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>, tensor<1x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x9AB682B83040F9B654C0DEC0303B0C3E963505C104B8F733B532143CA0BE74B8063F46C16D3D5A3A"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    %c1 = "tosa.const"() <{values = dense<"0xF7BA2F405033E03FA1BE"> : tensor<1x5xf16>}> : () -> tensor<1x5xf16>
    return %c0, %c1 : tensor<4x5xf16>, tensor<1x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x22BD1D3EA540223EA4C39CC2FB41F63EA3402BC47EBDAE400237FA41A0C2B6BDB243D1C0A642E8BA"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
