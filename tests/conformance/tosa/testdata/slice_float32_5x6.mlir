// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<3x3xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<3x3xf32>
    %st = "tosa.const_shape"() <{values = dense<[1, 2]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %sz = "tosa.const_shape"() <{values = dense<[3, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %r = "tosa.slice"(%in, %st, %sz) : (tensor<5x6xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<3x3xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<3x3xf32>, tensor<3x3xf32>) -> ()
    return %r : tensor<3x3xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x2B1E11C087A7A23F311EEABFF6B22E3F54FC3E40B68922C0007C34BF0D132D40FE6D2EC06D5427BFEBF2E73F22D20AC0BB3C16C02522AFBFC894A23D87B1E73F0CDE16BEFF29D43FC9D5F6BF97292C40BD5883BF77F7933FD1D9EF3F3BE1CDBFCA0F2A40FB732C3FB31B3BC0669BBFBD12CD28C0EE0E3940"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<3x3xf32> {
    %c = "tosa.const"() <{values = dense<"0xFE6D2EC06D5427BFEBF2E73FC894A23D87B1E73F0CDE16BEBD5883BF77F7933FD1D9EF3F"> : tensor<3x3xf32>}> : () -> tensor<3x3xf32>
    return %c : tensor<3x3xf32>
  }
}
