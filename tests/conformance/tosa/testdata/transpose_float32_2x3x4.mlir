// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x2x3xf32>) {
    %in = call @inputs() : () -> (tensor<2x3x4xf32>)
    %want = call @expected() : () -> tensor<4x2x3xf32>
    %r = "tosa.transpose"(%in) <{perms = array<i32: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> ()
    return %r : tensor<4x2x3xf32>
  }
  func.func private @inputs() -> (tensor<2x3x4xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x99E736BF6638923F76AC1AC083BB933F05D59BBE7BCAA83FD72B1E40D9F24ABF94A52E402C041BC0820CCB3E5466EDBFB0E7094012950D403577E73FAAC80DC022C688BE09E2DDBF52939EBFF701F33E21DA42BFD5A836401CFCEB3F21030740"> : tensor<2x3x4xf32>}> : () -> tensor<2x3x4xf32>
    return %c0 : tensor<2x3x4xf32>
  }
  func.func private @expected() -> tensor<4x2x3xf32> {
    %c = "tosa.const"() <{values = dense<"0x99E736BF05D59BBE94A52E40B0E7094022C688BE21DA42BF6638923F7BCAA83F2C041BC012950D4009E2DDBFD5A8364076AC1AC0D72B1E40820CCB3E3577E73F52939EBF1CFCEB3F83BB933FD9F24ABF5466EDBFAAC80DC0F701F33E21030740"> : tensor<4x2x3xf32>}> : () -> tensor<4x2x3xf32>
    return %c : tensor<4x2x3xf32>
  }
}
