// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xi32>) {
    %in = call @inputs() : () -> (tensor<5x6xi32>)
    %want = call @expected() : () -> tensor<5x1xi32>
    %r = "tosa.reduce_max"(%in) <{axis = 1 : i32}> : (tensor<5x6xi32>) -> tensor<5x1xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xi32>, tensor<5x1xi32>) -> ()
    return %r : tensor<5x1xi32>
  }
  func.func private @inputs() -> (tensor<5x6xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-2, -3, -1, -5, -3, -4], [-4, -5, -3, -2,  1,  4], [ 3,  1,  0, -4,  2, -3], [ 1,  1, -4, -1, -4,  1], [-1,  3, -1, -3, -1,  3]]> : tensor<5x6xi32>}> : () -> tensor<5x6xi32>
    return %c0 : tensor<5x6xi32>
  }
  func.func private @expected() -> tensor<5x1xi32> {
    %c = "tosa.const"() <{values = dense<[[-1], [ 4], [ 3], [ 1], [ 3]]> : tensor<5x1xi32>}> : () -> tensor<5x1xi32>
    return %c : tensor<5x1xi32>
  }
}
