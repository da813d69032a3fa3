// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi1>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi1>
    %r = "tosa.greater"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi1>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi1>, tensor<4x5xi1>) -> ()
    return %r : tensor<4x5xi1>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[ 0, -2,  2, -3,  2], [ 1,  0, -2, -3,  1], [ 0, -1, -1, -2,  2], [ 0,  1,  1, -2,  0]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[-3, -3, -1, -3, -1], [ 0, -1, -1,  0,  2], [ 0,  0,  0, -3, -1], [-1,  1,  2, -1, -3]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi1> {
    %c = "tosa.const"() <{values = dense<[[ true,  true,  true, false,  true], [ true,  true, false, false, false], [false, false, false,  true,  true], [ true, false, false, false,  true]]> : tensor<4x5xi1>}> : () -> tensor<4x5xi1>
    return %c : tensor<4x5xi1>
  }
}
