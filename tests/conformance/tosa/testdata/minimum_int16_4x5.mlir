// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi16>, tensor<4x5xi16>)
    %want = call @expected() : () -> tensor<4x5xi16>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xi16>, tensor<4x5xi16>) -> tensor<4x5xi16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi16>, tensor<4x5xi16>) -> ()
    return %r : tensor<4x5xi16>
  }
  func.func private @inputs() -> (tensor<4x5xi16>, tensor<4x5xi16>) {
    %c0 = "tosa.const"() <{values = dense<[[  4, -28, -17,  38, -25], [ 20, -11,  36,  25, -13], [-18, -34,  26,  23, -45], [ 15, -23,  23,  16,  28]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    %c1 = "tosa.const"() <{values = dense<[[-41,  14, -18, -14, -14], [ 49,  31,  32,  -8, -37], [ 42,  -2, -10,  -1,  10], [  9, -48,  24, -34, -25]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c0, %c1 : tensor<4x5xi16>, tensor<4x5xi16>
  }
  func.func private @expected() -> tensor<4x5xi16> {
    %c = "tosa.const"() <{values = dense<[[-41, -28, -18, -14, -25], [ 20, -11,  32,  -8, -37], [-18, -34, -10,  -1, -45], [  9, -48,  23, -34, -25]]> : tensor<4x5xi16>}> : () -> tensor<4x5xi16>
    return %c : tensor<4x5xi16>
  }
}
