// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.exp"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x1B38423E62B79D3F3AD720C01F2232408D391B40E5C710408A52034085823CC023534DBFA7FDE7BF282B893F953FA7BF46180B4056CE01403B392040FACEC2BFEB5D8EBFE9B8933FB4B6DBBF32BF5E3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x81BB9A3F926E5B4089EAA53DF4618141E1E73441CFAA19417D0CF9408B5B573DDA95E53EE62C273E79E33A40509D8A3E8C9A0C419737F340199A4341CF865F3E415BA83E67F34A401401383E40C71840"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
