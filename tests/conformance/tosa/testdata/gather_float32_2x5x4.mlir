// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<2x3x4xf32>) {
    %in:2 = call @inputs() : () -> (tensor<2x5x4xf32>, tensor<2x3xi32>)
    %want = call @expected() : () -> tensor<2x3x4xf32>
    %r = "tosa.gather"(%in#0, %in#1) : (tensor<2x5x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> ()
    return %r : tensor<2x3x4xf32>
  }
  func.func private @inputs() -> (tensor<2x5x4xf32>, tensor<2x3xi32>) {
    %c0 = "tosa.const"() <{values = dense<"0x86DA513F7CD08D3F974317C05B98AF3F2BE7263F74FCD1BE14ED5E3E6C2C66BF19B8CDBF12CD3AC041A80940DC4909C092A75ABF0FAC1940286514C05383374044DD0BC0303718402CCBCB3FFB218CBFF4C19BBF4E2FAA3E05DD3AC020F99A3F0F2537C033E5EBBFEB8E2FC04262DABF6620DCBF0BDA10C0C78C0DC0AEF08F3F4F2F0F40920824C03CE61B3F8A0B9B3F2B1A0DBF07DC3CC08C1AFFBF8D7A7DBF"> : tensor<2x5x4xf32>}> : () -> tensor<2x5x4xf32>
    %c1 = "tosa.const"() <{values = dense<[[4, 3, 3], [1, 2, 0]]> : tensor<2x3xi32>}> : () -> tensor<2x3xi32>
    return %c0, %c1 : tensor<2x5x4xf32>, tensor<2x3xi32>
  }
  func.func private @expected() -> tensor<2x3x4xf32> {
    %c = "tosa.const"() <{values = dense<"0x44DD0BC0303718402CCBCB3FFB218CBF92A75ABF0FAC1940286514C05383374092A75ABF0FAC1940286514C0538337400F2537C033E5EBBFEB8E2FC04262DABF6620DCBF0BDA10C0C78C0DC0AEF08F3FF4C19BBF4E2FAA3E05DD3AC020F99A3F"> : tensor<2x3x4xf32>}> : () -> tensor<2x3x4xf32>
    return %c : tensor<2x3x4xf32>
  }
}
