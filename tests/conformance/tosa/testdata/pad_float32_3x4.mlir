// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x6xf32>) {
    %in = call @inputs() : () -> (tensor<3x4xf32>)
    %want = call @expected() : () -> tensor<4x6xf32>
    %p = "tosa.const_shape"() <{values = dense<[1, 0, 0, 2]> : tensor<4xindex>}> : () -> !tosa.shape<4>
    %pv = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %r = "tosa.pad"(%in, %p, %pv) : (tensor<3x4xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<4x6xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x6xf32>, tensor<4x6xf32>) -> ()
    return %r : tensor<4x6xf32>
  }
  func.func private @inputs() -> (tensor<3x4xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x64C71640950BAFBD0A609BBFC1120DBF87AB94BF55E914403FBE38C07ABD3AC0D11E3B409BF1D93FEE882E40F48E88BF"> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
    return %c0 : tensor<3x4xf32>
  }
  func.func private @expected() -> tensor<4x6xf32> {
    %c = "tosa.const"() <{values = dense<"0x00000000000000000000000000000000000000000000000064C71640950BAFBD0A609BBFC1120DBF000000000000000087AB94BF55E914403FBE38C07ABD3AC00000000000000000D11E3B409BF1D93FEE882E40F48E88BF0000000000000000"> : tensor<4x6xf32>}> : () -> tensor<4x6xf32>
    return %c : tensor<4x6xf32>
  }
}
