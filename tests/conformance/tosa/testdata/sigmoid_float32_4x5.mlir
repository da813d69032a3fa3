// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.sigmoid"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x7C8F3B3FE5FF78C0AF7185BF09F20040FC21C4BF768C2BC0E81C08C0385A08404961A23F42E9C73F40C1493FDA7ED63FCB83A0BF4DAED43FC8853ABEF4282F4062F5743FC78D94BF6AB3F03FB1185E3E"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x40E62C3F7808A43C7675853EFFE0613F52EC353E405A833D8028DA3D3ED2643FFACE473FDF9C533F0AFB2F3F9FA3573F3355633EA327573FBABFE83E4D6D703F67F5383FBB49743E581F5E3FADD30D3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
