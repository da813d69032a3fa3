// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi8>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi8>, tensor<4x5xi8>)
    %want = call @expected() : () -> tensor<4x5xi8>
    %r = "tosa.minimum"(%in#0, %in#1) : (tensor<4x5xi8>, tensor<4x5xi8>) -> tensor<4x5xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi8>, tensor<4x5xi8>) -> ()
    return %r : tensor<4x5xi8>
  }
  func.func private @inputs() -> (tensor<4x5xi8>, tensor<4x5xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[-35,  12, -41,  31, -20], [ 39, -29, -43, -32,  48], [-26,   3,  47, -47,   4], [-42,  -7, -45,   1,  37]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    %c1 = "tosa.const"() <{values = dense<[[ -2,  47,   4,  17, -47], [ 20, -31, -21,  -2,  47], [-42,  20, -40,  37, -50], [-14, -42, -44,  17,  17]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c0, %c1 : tensor<4x5xi8>, tensor<4x5xi8>
  }
  func.func private @expected() -> tensor<4x5xi8> {
    %c = "tosa.const"() <{values = dense<[[-35,  12, -41,  17, -47], [ 20, -31, -43, -32,  47], [-42,   3, -40, -47, -50], [-42, -42, -45,   1,  17]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c : tensor<4x5xi8>
  }
}
