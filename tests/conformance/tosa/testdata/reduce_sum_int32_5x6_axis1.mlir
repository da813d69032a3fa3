// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xi32>) {
    %in = call @inputs() : () -> (tensor<5x6xi32>)
    %want = call @expected() : () -> tensor<5x1xi32>
    %r = "tosa.reduce_sum"(%in) <{axis = 1 : i32}> : (tensor<5x6xi32>) -> tensor<5x1xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xi32>, tensor<5x1xi32>) -> ()
    return %r : tensor<5x1xi32>
  }
  func.func private @inputs() -> (tensor<5x6xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-1,  3,  1, -3, -1, -5], [ 1,  3,  3, -4, -3,  4], [ 0,  4,  4,  3, -2,  1], [-4,  0,  3, -3,  2, -4], [ 2, -2,  0, -1,  4, -5]]> : tensor<5x6xi32>}> : () -> tensor<5x6xi32>
    return %c0 : tensor<5x6xi32>
  }
  func.func private @expected() -> tensor<5x1xi32> {
    %c = "tosa.const"() <{values = dense<[[-6], [ 4], [10], [-6], [-2]]> : tensor<5x1xi32>}> : () -> tensor<5x1xi32>
    return %c : tensor<5x1xi32>
  }
}
