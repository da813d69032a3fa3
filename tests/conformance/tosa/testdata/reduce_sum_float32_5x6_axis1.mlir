// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<5x1xf32>
    %r = "tosa.reduce_sum"(%in) <{axis = 1 : i32}> : (tensor<5x6xf32>) -> tensor<5x1xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xf32>, tensor<5x1xf32>) -> ()
    return %r : tensor<5x1xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xFBBCA7BFB57930C0FD240BBFA14FA5BE64123F40025CC9BEAD53E83F15353740CA814B3F83CA293F2A4630C025C935C01D8137BF690D04407ADA18408FE0A0BF905E14402E69573FF07CBC3F24AC0A409249B43E99F103C094C661BF73D33FC097B98DBFADB1B1BF8B3712BE63850CBFDB52E0BD5C7A8FBF"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<5x1xf32> {
    %c = "tosa.const"() <{values = dense<"0x82E415C0BC8A0A3F1868B440C685F9BF1C5D8DC0"> : tensor<5x1xf32>}> : () -> tensor<5x1xf32>
    return %c : tensor<5x1xf32>
  }
}
