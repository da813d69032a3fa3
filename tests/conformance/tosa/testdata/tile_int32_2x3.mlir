// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x9xi32>) {
    %in = call @inputs() : () -> (tensor<2x3xi32>)
    %want = call @expected() : () -> tensor<4x9xi32>
    %m = "tosa.const_shape"() <{values = dense<[2, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %r = "tosa.tile"(%in, %m) : (tensor<2x3xi32>, !tosa.shape<2>) -> tensor<4x9xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x9xi32>, tensor<4x9xi32>) -> ()
    return %r : tensor<4x9xi32>
  }
  func.func private @inputs() -> (tensor<2x3xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-28,   0, -48], [-45, -16,  40]]> : tensor<2x3xi32>}> : () -> tensor<2x3xi32>
    return %c0 : tensor<2x3xi32>
  }
  func.func private @expected() -> tensor<4x9xi32> {
    %c = "tosa.const"() <{values = dense<[[-28,   0, -48, -28,   0, -48, -28,   0, -48], [-45, -16,  40, -45, -16,  40, -45, -16,  40], [-28,   0, -48, -28,   0, -48, -28,   0, -48], [-45, -16,  40, -45, -16,  40, -45, -16,  40]]> : tensor<4x9xi32>}> : () -> tensor<4x9xi32>
    return %c : tensor<4x9xi32>
  }
}
