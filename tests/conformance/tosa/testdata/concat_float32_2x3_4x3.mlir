// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<6x3xf32>) {
    %in:2 = call @inputs() : () -> (tensor<2x3xf32>, tensor<4x3xf32>)
    %want = call @expected() : () -> tensor<6x3xf32>
    %r = "tosa.concat"(%in#0, %in#1) <{axis = 0 : i32}> : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<6x3xf32>, tensor<6x3xf32>) -> ()
    return %r : tensor<6x3xf32>
  }
  func.func private @inputs() -> (tensor<2x3xf32>, tensor<4x3xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xAC5297BF0625DF3F24D324C0AB022440448EB23E64DBD43F"> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
    %c1 = "tosa.const"() <{values = dense<"0xE1F0D83FA6C59BBF318F13C0375C1D3E3CA8A13FF9DBD0BE2F183DC0AB8E943F123D1140E459843D1C5A04C005B9D03D"> : tensor<4x3xf32>}> : () -> tensor<4x3xf32>
    return %c0, %c1 : tensor<2x3xf32>, tensor<4x3xf32>
  }
  func.func private @expected() -> tensor<6x3xf32> {
    %c = "tosa.const"() <{values = dense<"0xAC5297BF0625DF3F24D324C0AB022440448EB23E64DBD43FE1F0D83FA6C59BBF318F13C0375C1D3E3CA8A13FF9DBD0BE2F183DC0AB8E943F123D1140E459843D1C5A04C005B9D03D"> : tensor<6x3xf32>}> : () -> tensor<6x3xf32>
    return %c : tensor<6x3xf32>
  }
}
