// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.rsqrt"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x9F92A93F2CDC704071DF45409EBB933F66CAB13F2A134A40C0995B3F52EF21401DFBD23F7E6A28403DEB6E40F0412D40437B1D4017BD943FA78C7A403F852C3FCA554F40A3F1A93F3B693740BDBF4040"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x9D6A5E3F2BF6033F7F97113F514A6E3F2237593FF111103F9F338A3F3EF0203F3066473FB6CF1D3F207F043F3D971B3FB932233FB87B6D3F8262013F3CEC9B3F133B0E3F672C5E3F0839173FA483133F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
