// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xbf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xbf16>, tensor<1x5xbf16>)
    %want = call @expected() : () -> tensor<4x5xbf16>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xbf16>, tensor<1x5xbf16>) -> tensor<4x5xbf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xbf16>, tensor<4x5xbf16>) -> ()
    return %r : tensor<4x5xbf16>
  }
  func.func private @inputs() -> (tensor<4x5xbf16>, tensor<1x5xbf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x244030BE3DC004C02ABF10C08EBF22405E3F3FC031C0C93FD8BE31BF0CBF00C0663F2B3FBE3F2D3F"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    %c1 = "tosa.const"() <{values = dense<"0xDABF3D4002C0193E2ABF"> : tensor<1x5xbf16>}> : () -> tensor<1x5xbf16>
    return %c0, %c1 : tensor<4x5xbf16>, tensor<1x5xbf16>
  }
  func.func private @expected() -> tensor<4x5xbf16> {
    %c = "tosa.const"() <{values = dense<"0xDABF30BE3DC004C02ABF10C08EBF02C0193E3FC031C0C93F02C031BF2ABF00C0663F02C0193E2ABF"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    return %c : tensor<4x5xbf16>
  }
}
