// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<6x4xi8>) {
    %in = call @inputs() : () -> (tensor<2x3x4xi8>)
    %want = call @expected() : () -> tensor<6x4xi8>
    %s = "tosa.const_shape"() <{values = dense<[6, 4]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %r = "tosa.reshape"(%in, %s) : (tensor<2x3x4xi8>, !tosa.shape<2>) -> tensor<6x4xi8>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<6x4xi8>, tensor<6x4xi8>) -> ()
    return %r : tensor<6x4xi8>
  }
  func.func private @inputs() -> (tensor<2x3x4xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[[ 12, -32, -27,   6],  [-18,  34,  -6, -19],  [-25, -18,  35,   7]], [[ -9,  46, -45, -22],  [  6, -23,   1, -46],  [ 15, -44,  34,  28]]]> : tensor<2x3x4xi8>}> : () -> tensor<2x3x4xi8>
    return %c0 : tensor<2x3x4xi8>
  }
  func.func private @expected() -> tensor<6x4xi8> {
    %c = "tosa.const"() <{values = dense<[[ 12, -32, -27,   6], [-18,  34,  -6, -19], [-25, -18,  35,   7], [ -9,  46, -45, -22], [  6, -23,   1, -46], [ 15, -44,  34,  28]]> : tensor<6x4xi8>}> : () -> tensor<6x4xi8>
    return %c : tensor<6x4xi8>
  }
}
