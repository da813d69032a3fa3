// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.cos"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x720A1DBE5F2F253EFDA20DC0EF8B35BF080A2A40432620C0809C22C06EC6BB3FC9E20E402850473EC2DD1AC0426BF73FACAA33C0F6A102C029FD113FAE8D2B40D07E1C4047EC20408F2B36C08B1D7C3E"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xD4FE7C3F28AD7C3F605919BF9847423F4B8262BF33734DBFEB2B53BF1B35D43D1F521DBF7C2A7B3F252840BFB066B5BEEDD371BF5208E8BE4D7D573F874465BF5A6644BFE4474FBF7AED74BFB247783F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
