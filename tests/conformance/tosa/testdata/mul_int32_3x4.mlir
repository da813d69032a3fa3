// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<3x4xi32>) {
    %in:2 = call @inputs() : () -> (tensor<3x4xi32>, tensor<3x4xi32>)
    %want = call @expected() : () -> tensor<3x4xi32>
    %s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %r = "tosa.mul"(%in#0, %in#1, %s) : (tensor<3x4xi32>, tensor<3x4xi32>, tensor<1xi8>) -> tensor<3x4xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<3x4xi32>, tensor<3x4xi32>) -> ()
    return %r : tensor<3x4xi32>
  }
  func.func private @inputs() -> (tensor<3x4xi32>, tensor<3x4xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[ 90, -24,  87,   5], [ 96,  70, -55,   0], [ 92,  12,  27, -29]]> : tensor<3x4xi32>}> : () -> tensor<3x4xi32>
    %c1 = "tosa.const"() <{values = dense<[[ -74,  -23,    6,  -47], [  -8,  -86,  -94, -100], [   4,  -82,   26,   98]]> : tensor<3x4xi32>}> : () -> tensor<3x4xi32>
    return %c0, %c1 : tensor<3x4xi32>, tensor<3x4xi32>
  }
  func.func private @expected() -> tensor<3x4xi32> {
    %c = "tosa.const"() <{values = dense<[[-6660,   552,   522,  -235], [ -768, -6020,  5170,     0], [  368,  -984,   702, -2842]]> : tensor<3x4xi32>}> : () -> tensor<3x4xi32>
    return %c : tensor<3x4xi32>
  }
}
