// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi16>, tensor<4x5xi16>)
    %want = call @expected() : () -> tensor<4x5xi16>
    %r = "tosa.sub"(%in#0, %in#1) : (tensor<4x5xi16>, tensor<4x5xi16>) -> tensor<4x5xi16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi16>, tensor<4x5xi16>) -> ()
    return %r : tensor<4x5xi16>
  }
  func.func private @inputs() -> (tensor<4x5xi16>, tensor<4x5xi16>) {
    %c0 = "tosa.const"() <{values = dense<[[ 27, -30,  37,  26, -48], [-15, -35, -40, -30, -47], [ 12, -49,  49, -45,  11], [-10, -27, -36, -42,  14]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    %c1 = "tosa.const"() <{values = dense<[[ 33,  43,   1,  -3,  45], [-25,  13, -15,  16, -36], [ -3, -49,  16, -33,  35], [ 14,  49,  44, -46, -23]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c0, %c1 : tensor<4x5xi16>, tensor<4x5xi16>
  }
  func.func private @expected() -> tensor<4x5xi16> {
    %c = "tosa.const"() <{values = dense<[[ -6, -73,  36,  29, -93], [ 10, -48, -25, -46, -11], [ 15,   0,  33, -12, -24], [-24, -76, -80,   4,  37]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c : tensor<4x5xi16>
  }
}
