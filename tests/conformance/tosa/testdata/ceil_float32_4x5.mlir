// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.ceil"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xABCD09C02CEBEABFE1C82CC045A3923F6F943BC0CC95F63E3CA80F3F6D9017407BC688BF3B1214C026871C4046042A3E1783863F35CDB93E0DE48FBEE1E55FBF0F474DBEEF3E6A3F90B7DF3FD3169F3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x000000C0000080BF000000C000000040000000C00000803F0000803F00004040000080BF000000C0000040400000803F000000400000803F0000008000000080000000800000803F0000004000000040"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
