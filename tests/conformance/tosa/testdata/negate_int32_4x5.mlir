// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in = call @inputs() : () -> (tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %zi = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
    %zo = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
    %r = "tosa.negate"(%in, %zi, %zo) : (tensor<4x5xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-12,  49, -17, -43,  36], [-43, -49,  11,   2,   2], [  9,  31,  37, -30,   6], [ 42, -33,   3,  13, -32]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0 : tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[ 12, -49,  17,  43, -36], [ 43,  49, -11,  -2,  -2], [ -9, -31, -37,  30,  -6], [-42,  33,  -3, -13,  32]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
