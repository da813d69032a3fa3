// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5xi32>) {
    %in = call @inputs() : () -> (tensor<5x7xf32>)
    %want = call @expected() : () -> tensor<5xi32>
    %r = "tosa.argmax"(%in) <{axis = 1 : i32}> : (tensor<5x7xf32>) -> tensor<5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5xi32>, tensor<5xi32>) -> ()
    return %r : tensor<5xi32>
  }
  func.func private @inputs() -> (tensor<5x7xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x9932FDBF3395E83F21C1AABF979E2FBF29131BC07439173F301A6CBF93FD23C062822EC0CA7DD1BF7A41DDBA5401D33F2BF6D63F665AFFBF9EFF0440871DABBF699582BFD7C7273F7F541240C5113DBF6327AE3ECC5B3EC06C1CA83FCEE92CC0352530405E09AFBDA60506405774953F9DC709401C41AC3F45B228BD3C651ABD7010023F44B356BF4EFEBABF"> : tensor<5x7xf32>}> : () -> tensor<5x7xf32>
    return %c0 : tensor<5x7xf32>
  }
  func.func private @expected() -> tensor<5xi32> {
    %c = "tosa.const"() <{values = dense<[1, 5, 4, 3, 0]> : tensor<5xi32>}> : () -> tensor<5xi32>
    return %c : tensor<5xi32>
  }
}
