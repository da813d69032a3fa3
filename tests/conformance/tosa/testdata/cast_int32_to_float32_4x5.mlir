// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.cast"(%in) : (tensor<4x5xi32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-351, -707,  210,   52,  706], [ 875, -138, -869, -491, -753], [ 973, -426, -963,  664, -607], [-960,  152,  699,  294,  100]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0 : tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x0080AFC300C030C400005243000050420080304400C05A4400000AC3004059C40080F5C300403CC4004073440000D5C300C070C40000264400C017C4000070C40000184300C02E44000093430000C842"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
