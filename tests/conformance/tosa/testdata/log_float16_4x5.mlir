// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.log"(%in) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x23348A3EA63C6343E53B503DFB423C3CA542E13CE2401D4259321242FA3D553FA3428438F73C5342"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c0 : tensor<4x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x69BDDD37CF303A3DCBA28A34003D4A2BCD3C5B32243B783C78BE713C6D36D938CC3C93B8EA329B3C"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
