// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-27,  30,  43,  21,  23], [ -9, -23, -26, -24, -18], [  7, -40,  38,  14,  -3], [ -8, -37, -14,   7, -35]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[-20,  17, -21,  20,  27], [-38, -15, -25,  39,   8], [ 25,  28,  47, -28,  22], [ -7,  38,  -5,   4,  36]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[-27,  17, -21,  20,  23], [-38, -23, -26, -24, -18], [  7, -40,  38, -28,  -3], [ -8, -37, -14,   4, -35]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
