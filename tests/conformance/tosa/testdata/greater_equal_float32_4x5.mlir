// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi1>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xi1>
    %r = "tosa.greater_equal"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi1>, tensor<4x5xi1>) -> ()
    return %r : tensor<4x5xi1>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x8F29F5BFB452C13F49A9B7BF22E917402AE2E13FC1A8DF3E3AE12FC0156F28BECCE52C407B77F63F2A4624C0889B4A3E38A56DBE0559E33E57CBCE3FB6412E3EFD9CE2BF48FB92BFE2B311BF4BC7C2BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x8F29F5BFB452C13F49A9B7BF22E917402AE2E13F34ACD3BFD7BDCC3F7C6FCEBF4F1044BFFD6FE83F51F306409611913F0FC4A3BFA5F50440FC033AC0C23A25C0B6078BBFA64CE23E9055143CB7EB49BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xi1> {
    %c = "tosa.const"() <{values = dense<[[ true,  true,  true,  true,  true], [ true, false,  true,  true,  true], [false, false,  true, false,  true], [ true, false, false, false, false]]> : tensor<4x5xi1>}> : () -> tensor<4x5xi1>
    return %c : tensor<4x5xi1>
  }
}
