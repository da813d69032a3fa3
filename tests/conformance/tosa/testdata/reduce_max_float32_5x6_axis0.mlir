// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<1x6xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<1x6xf32>
    %r = "tosa.reduce_max"(%in) <{axis = 0 : i32}> : (tensor<5x6xf32>) -> tensor<1x6xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<1x6xf32>, tensor<1x6xf32>) -> ()
    return %r : tensor<1x6xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x9A25104038FB2F40CA8CC33F1CDD18C06ED8853F3B0B873F66F431C074AB0040C886EA3F86FC3FBF0DEBE83FA1EF3CC08CB50D40AC0C10C0708C953F62483D40C502983F8CC5FA3EBEED2FC008C2AE3FA26EF6BF576222C0EFFB86BF27486C3F32051FC0E945863FEB8CADBFEBE6084003F9F63F363AB2BF"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<1x6xf32> {
    %c = "tosa.const"() <{values = dense<"0x9A25104038FB2F40C886EA3F62483D4003F9F63F3B0B873F"> : tensor<1x6xf32>}> : () -> tensor<1x6xf32>
    return %c : tensor<1x6xf32>
  }
}
