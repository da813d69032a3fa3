// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.exp"(%in) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x033C4130D14022BD3938F2BFCBBF153430BC56415B2FE340423B26C1DE41DFAA30C06A3F46C1F2C1"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c0 : tensor<4x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x7441923C8F496F34C83E643090302A3D9E35354B7D3CC149F440E12CB34C953BE32F6246952C8D2A"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
