// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.tanh"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xB9BFD0BF584A15C084BE893E8FE0F7BF8771ED3ECCB004BFE8449BBFFDF626C04A95B53F496908C052F13BC02F952540FB45FC3E387C99BF4470B83F0322E7BF88F215C0295C9ABFE92A27C0F51B32C0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x4E1A6DBF50397BBFB383863EFB9175BFACC4DD3E49EBF3BE3F6C56BF6A3D7DBFD8A9633FDDE378BF39907EBF671E7D3FD0A9E93E745855BF95D5643F868872BFEF517BBF7EE055BFDB417DBF6B0C7EBF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
