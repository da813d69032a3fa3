// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %zi = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %zo = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %r = "tosa.negate"(%in, %zi, %zo) : (tensor<4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x8A14EFBF42684EBFEAD92B40CB330140DCB024BFB239633FFF95FB3E8E00A4BD523CFABF8810C23F66AD28C07A4D243E92E14DBC55CD1BBFEE7D673FA50432BF7A33863CE8320F3F10AA9A3E305901C0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x8A14EF3F42684E3FEAD92BC0CB3301C0DCB0243FB23963BFFF95FBBE8E00A43D523CFA3F8810C2BF66AD28407A4D24BE92E14D3C55CD1B3FEE7D67BFA504323F7A3386BCE8320FBF10AA9ABE30590140"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
