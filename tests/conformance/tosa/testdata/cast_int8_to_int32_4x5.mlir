// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in = call @inputs() : () -> (tensor<4x5xi8>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.cast"(%in) : (tensor<4x5xi8>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi8>) {
    %c0 = "tosa.const"() <{values = dense<[[ 88,  93,  21, -35,  98], [ 93,  34,  40, -96,  15], [-90,  57, -54,  59,  10], [ 73,  94,  32,  54, -43]]> : tensor<4x5xi8>}> : () -> tensor<4x5xi8>
    return %c0 : tensor<4x5xi8>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[ 88,  93,  21, -35,  98], [ 93,  34,  40, -96,  15], [-90,  57, -54,  59,  10], [ 73,  94,  32,  54, -43]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
