// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi16>, tensor<4x5xi16>)
    %want = call @expected() : () -> tensor<4x5xi16>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xi16>, tensor<4x5xi16>) -> tensor<4x5xi16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi16>, tensor<4x5xi16>) -> ()
    return %r : tensor<4x5xi16>
  }
  func.func private @inputs() -> (tensor<4x5xi16>, tensor<4x5xi16>) {
    %c0 = "tosa.const"() <{values = dense<[[-15,  -7, -14, -49, -23], [ -2,  40,  19, -26,  18], [-49,  26,  -1,   5, -25], [  4,   8, -14,  -7,  20]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    %c1 = "tosa.const"() <{values = dense<[[ -8,  37,  -1, -24, -29], [-43,   4, -43, -48,  47], [  1,  -2,  47, -28, -27], [ -1,  13, -50, -28, -34]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c0, %c1 : tensor<4x5xi16>, tensor<4x5xi16>
  }
  func.func private @expected() -> tensor<4x5xi16> {
    %c = "tosa.const"() <{values = dense<[[-23,  30, -15, -73, -52], [-45,  44, -24, -74,  65], [-48,  24,  46, -23, -52], [  3,  21, -64, -35, -14]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c : tensor<4x5xi16>
  }
}
