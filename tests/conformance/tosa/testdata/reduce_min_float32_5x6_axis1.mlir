// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<5x1xf32>
    %r = "tosa.reduce_min"(%in) <{axis = 1 : i32}> : (tensor<5x6xf32>) -> tensor<5x1xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xf32>, tensor<5x1xf32>) -> ()
    return %r : tensor<5x1xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x4D2736C05992F33EAF043240533288BFFAAF0340BAC863BE46F41E402A2F11C0E4312C3E17DE3240557837C0501021C080899DBFCF16FE3FE076743E2F2B93BF7426B73F6D6404C0359A1B40CF14833FCDB9CA3E16BB344032483EC0D9AD2040FBCAC53F33AD413EA3360C409C6B09402242DDBF0429833F"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<5x1xf32> {
    %c = "tosa.const"() <{values = dense<"0x4D2736C0557837C06D6404C032483EC02242DDBF"> : tensor<5x1xf32>}> : () -> tensor<5x1xf32>
    return %c : tensor<5x1xf32>
  }
}
