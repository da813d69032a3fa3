// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.reciprocal"(%in) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x113F3540C242994368416B3CD042B63F3D43F43DA040B74126427C415F421E3ADE425640C6432D43"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c0 : tensor<4x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x87389B37BC343634EB353E3BB23426386C346039EB3699353435D63506353B3DA93461371E347634"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
