// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.cast"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xD20C62BFF5C04D3ECF43ACBF68DC6DBF40F25E3DA62CA6BE67FB2C4069DD1840ED84813FD0E6C63FA75F193F28410FC05A2BAB3F8BB522C02C4671BF40932CC02C42AF3FAB6A05C07C99B83FFE92B8BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x10BB6E3262BD6FBBF82A31B56841C7400C3C373ECB387AC0593D16C18ABB65C17A3D2BC0C53DC5BD"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
