// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<1x6xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<1x6xf32>
    %r = "tosa.reduce_sum"(%in) <{axis = 0 : i32}> : (tensor<5x6xf32>) -> tensor<1x6xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<1x6xf32>, tensor<1x6xf32>) -> ()
    return %r : tensor<1x6xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xC65C2040141AD93FD43920407034393FCC66983E2852A53E7831E33FFB843A400D1EA2BE25A8AF3F52929EBFE3680BC06D8AF8BE7E6189BF3C551B3E87AD0ABF4CA81140D731374058C9403F620912C0142F513F3CEE2BBE55272A40BB4D2CC0525B21BEBB7AE8BE265E473FFBB9913E156268BC64C82740"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<1x6xf32> {
    %c = "tosa.const"() <{values = dense<"0x6A808C402E224D3FB4CE7B404FDCD53FF0AA7E4088B76F3F"> : tensor<1x6xf32>}> : () -> tensor<1x6xf32>
    return %c : tensor<1x6xf32>
  }
}
