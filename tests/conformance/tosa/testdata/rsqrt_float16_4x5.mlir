// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.rsqrt"(%in) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x4140D242BF40A440CE421842C53D7D40E93E8A40B5413338FA3A68421940FE409340B63DA13B2C3D"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c0 : tensor<4x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x7C3955383139403956389538A93A5739163A4F39BC38853D493C7838973910394A39B23A193C093B"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
