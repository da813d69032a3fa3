// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf16>) {
    %in = call @inputs() : () -> (tensor<4x5xf16>)
    %want = call @expected() : () -> tensor<4x5xf16>
    %r = "tosa.abs"(%in) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf16>, tensor<4x5xf16>) -> ()
    return %r : tensor<4x5xf16>
  }
  func.func private @inputs() -> (tensor<4x5xf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x29419DBCD7C1973D302C44B1B92E813DFDC153AD6534693F12400FB710B8D9B731C179418838E9BE"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c0 : tensor<4x5xf16>
  }
  func.func private @expected() -> tensor<4x5xf16> {
    %c = "tosa.const"() <{values = dense<"0x29419D3CD741973D302C4431B92E813DFD41532D6534693F12400F371038D937314179418838E93E"> : tensor<4x5xf16>}> : () -> tensor<4x5xf16>
    return %c : tensor<4x5xf16>
  }
}
