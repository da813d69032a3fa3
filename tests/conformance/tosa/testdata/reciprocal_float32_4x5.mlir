// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.reciprocal"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x13C9513F11076B403CB61140EDFE6F409597F33FB9C23A4038406A3FC1FD2040A6791A3FB716A93FF072673FCF870E402724DE3FD27E3140D8403D4056B88E3F13372F3FF5090F404686E23F576E4440"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x9B329C3F036C8B3ED7E1E03E2589883E1C85063F5C74AF3E5DE28B3FFF89CB3EEB1FD43FB0CA413FE0938D3FD4E6E53E8082133FFE9CB83EC424AD3EA898653F0C04BB3FA515E53ECAA7103F1CD1A63E"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
