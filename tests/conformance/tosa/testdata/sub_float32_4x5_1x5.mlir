// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<1x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<1x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x4A15E23F9D5EF73F2EC8803FE63025BEF07FB1BFD075BABFA4371B4020410D40663C0F4029623AC0FE781AC07131FABF9F200EC010651DC00CFF0D4083671ABF48D04C3F10EC2440B0F331C0597F6DBE"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x3752BABF571E8BBF130C79BF152EEEBED2856ABF"> : tensor<1x5xf32>}> : () -> tensor<1x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<1x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xC0334E407A3E4140384EFD3FA2959B3E1CF4F0BE00648EBAD0C6604025844B4029022D406981FFBF8A3F75BF34265EBF34BB9FBF9B3EFFBF80A04840EB3C5A3F7B86F13F152F6340ED2D14C0FC252F3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
