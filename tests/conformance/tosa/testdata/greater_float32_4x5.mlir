// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi1>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xi1>
    %r = "tosa.greater"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi1>, tensor<4x5xi1>) -> ()
    return %r : tensor<4x5xi1>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x981336C0A23B39BF385823C0541A20C0C1DA433F116D2FC033E194BFCC953EC0814F0FC07843DFBE0FD39CBE5E559C3F49563FC07584923EB9F809C03117DABF4B61903F33FA0D401D9333C03E6C2FBE"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x981336C0A23B39BF385823C0541A20C0C1DA433FDCFF2C40BB0514C023B43D400E0A1640830214C0DB71BBBEE487633F41FBA23FC622E63FD4762A409CADD0BF6084B13FC38E1E40D7B9C93F5ED316C0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xi1> {
    %c = "tosa.const"() <{values = dense<[[false, false, false, false, false], [false,  true, false, false,  true], [ true,  true, false, false, false], [false, false, false, false,  true]]> : tensor<4x5xi1>}> : () -> tensor<4x5xi1>
    return %c : tensor<4x5xi1>
  }
}
