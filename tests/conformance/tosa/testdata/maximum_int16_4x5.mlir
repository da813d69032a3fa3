// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi16>, tensor<4x5xi16>)
    %want = call @expected() : () -> tensor<4x5xi16>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xi16>, tensor<4x5xi16>) -> tensor<4x5xi16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi16>, tensor<4x5xi16>) -> ()
    return %r : tensor<4x5xi16>
  }
  func.func private @inputs() -> (tensor<4x5xi16>, tensor<4x5xi16>) {
    %c0 = "tosa.const"() <{values = dense<[[ -7,  37,  23,  15, -29], [-31,   9, -49,  30,  20], [-20,  37, -14, -34, -35], [-23,  25,  38,  23, -21]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    %c1 = "tosa.const"() <{values = dense<[[-15, -27, -30,  15,  -1], [ -9,  29, -49, -28, -19], [ 12, -31,  13, -21, -41], [ 31, -34, -32, -10, -45]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c0, %c1 : tensor<4x5xi16>, tensor<4x5xi16>
  }
  func.func private @expected() -> tensor<4x5xi16> {
    %c = "tosa.const"() <{values = dense<[[ -7,  37,  23,  15,  -1], [ -9,  29, -49,  30,  20], [ 12,  37,  13, -21, -35], [ 31,  25,  38,  23, -21]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c : tensor<4x5xi16>
  }
}
