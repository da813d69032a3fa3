// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<1x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.add"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<1x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x0FF77F3F576D2AC0002E2BBF844E61BFEC0E3D3FFA8204C001B064BFCD7DD8BC78A5EFBF65E55E3C44CE20C0D5B0C5BF45FEA2BF65F12440164AA93DA2CFE3BF2A06F03D9E916B3E8DD27E3F056BFDBE"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x137AA63FAAD8483E2CF99DBFF61A6DBF942CF7BE"> : tensor<1x5xf32>}> : () -> tensor<1x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<1x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xCD3A1340CCDF1DC02C90F3BFBD34E7BF44F1823EC21745BFD67932BF235BA1BF7A1933C06935F0BE75229BBFC095ACBFB87B20C04F55D33F0EDACCBE3C56F5BEE06DA03EF88680BFB8BC8D3DCC4B7ABF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
