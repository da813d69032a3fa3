// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xi32>) {
    %in = call @inputs() : () -> (tensor<5x6xi32>)
    %want = call @expected() : () -> tensor<5x1xi32>
    %r = "tosa.reduce_min"(%in) <{axis = 1 : i32}> : (tensor<5x6xi32>) -> tensor<5x1xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xi32>, tensor<5x1xi32>) -> ()
    return %r : tensor<5x1xi32>
  }
  func.func private @inputs() -> (tensor<5x6xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[ 3, -4, -5,  4, -2,  3], [-2, -1, -5, -1, -5, -1], [-1, -4,  2,  4, -5, -3], [ 0, -5,  1,  2,  0,  2], [ 3,  1, -3, -2, -4,  3]]> : tensor<5x6xi32>}> : () -> tensor<5x6xi32>
    return %c0 : tensor<5x6xi32>
  }
  func.func private @expected() -> tensor<5x1xi32> {
    %c = "tosa.const"() <{values = dense<[[-5], [-5], [-5], [-5], [-4]]> : tensor<5x1xi32>}> : () -> tensor<5x1xi32>
    return %c : tensor<5x1xi32>
  }
}
