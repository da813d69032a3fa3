// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<5x1xf32>
    %r = "tosa.reduce_product"(%in) <{axis = 1 : i32}> : (tensor<5x6xf32>) -> tensor<5x1xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xf32>, tensor<5x1xf32>) -> ()
    return %r : tensor<5x1xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xCFA89D3FCAA5B23F477CAA3FCABE513FA37D113F3B14943F0DD2943F486B893F1DE9653FC9AE0E3F1F1A823F2F5FAB3F58354F3F5D1E3A3FF698763FA249613FC59F993F12954C3F447F0C3FE16B9E3F5A33933F41A4AB3F2B93493F5FDB543F6B531C3F40A6203FD9CD853FD6281C3F9620953F62373C3F"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<5x1xf32> {
    %c = "tosa.const"() <{values = dense<"0x38E09D3FA2A9593F00F8F43E968F2F3F6954563E"> : tensor<5x1xf32>}> : () -> tensor<5x1xf32>
    return %c : tensor<5x1xf32>
  }
}
