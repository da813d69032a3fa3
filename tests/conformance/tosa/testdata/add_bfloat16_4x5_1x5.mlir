// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xbf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xbf16>, tensor<1x5xbf16>)
    %want = call @expected() : () -> tensor<4x5xbf16>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xbf16>, tensor<1x5xbf16>) -> tensor<4x5xbf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xbf16>, tensor<4x5xbf16>) -> ()
    return %r : tensor<4x5xbf16>
  }
  func.func private @inputs() -> (tensor<4x5xbf16>, tensor<1x5xbf16>) {
    %c0 = "tosa.const"() <{values = dense<"0x79BE8FBF00C03840B4BE3C403DC0FDBDD0BFBEBFA8BFF73F364061BF29BF5D3F09C080BF2DC08B3F"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    %c1 = "tosa.const"() <{values = dense<"0xA0BF3EBF144000C0F63E"> : tensor<1x5xbf16>}> : () -> tensor<1x5xbf16>
    return %c0, %c1 : tensor<4x5xbf16>, tensor<1x5xbf16>
  }
  func.func private @expected() -> tensor<4x5xbf16> {
    %c = "tosa.const"() <{values = dense<"0xBFBFEEBFA03E603F043ED83F6CC00C4068C080BF24C0983FA54038C038BEC6BE38C0A83F96C0C83F"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    return %c : tensor<4x5xbf16>
  }
}
