// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.pow"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x7633A23F55C40D3F44EBCB3FC205AA3FE549103F7E033C3FA0730A3F2491EE3FF16BDE3FB24DA63FD797AA3FA8F3ED3F4267123F507FC53F82BDA13F0CEFDD3F1DF1493F4C35DD3F3EEB083FD2508D3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x5237933EF871203F8CE676BF7798753FF96EDEBF5BFCCE3E7C8AA5BEC4B7F0BFB25D663FCDC7003FAF9AA0BEF8F9DE3FEA5D723F803395BF3FCD633F21A094BF13C4303DC2C2FE3F0FE3BD3F03B4AB3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xDC04893FEEC1303F8F5F233F6E12A83FC6562D40E0F7613F35249C3FABC39E3E2573D23F4104923F1CF1693FD77A3C405FD3163F686A1A3F17A09D3F2A1E073F91647D3F94223E403B58CA3E202C923F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
