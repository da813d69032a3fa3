// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi8>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi8>, tensor<4x5xi8>)
    %want = call @expected() : () -> tensor<4x5xi8>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xi8>, tensor<4x5xi8>) -> tensor<4x5xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi8>, tensor<4x5xi8>) -> ()
    return %r : tensor<4x5xi8>
  }
  func.func private @inputs() -> (tensor<4x5xi8>, tensor<4x5xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[-44,  28, -41, -25,  27], [ 15,  40, -19,  29, -36], [ 17,  -2,  -1, -44, -23], [  6,  38,   5, -16,  -9]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    %c1 = "tosa.const"() <{values = dense<[[-34,  29, -11,   8,  12], [ 24,  38, -41,   7,  44], [  5, -36,  27, -13,   0], [-23, -21,  32, -34,  16]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c0, %c1 : tensor<4x5xi8>, tensor<4x5xi8>
  }
  func.func private @expected() -> tensor<4x5xi8> {
    %c = "tosa.const"() <{values = dense<[[-78,  57, -52, -17,  39], [ 39,  78, -60,  36,   8], [ 22, -38,  26, -57, -23], [-17,  17,  37, -50,   7]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c : tensor<4x5xi8>
  }
}
