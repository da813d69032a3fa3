// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi1>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xf32>, tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xi1>
    %r = "tosa.equal"(%in#0, %in#1) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi1>, tensor<4x5xi1>) -> ()
    return %r : tensor<4x5xi1>
  }
  func.func private @inputs() -> (tensor<4x5xf32>, tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x9835284017E518C076BAA3BF6DFF0C404CCE2840A20B384094DFB8BE31756BBF46432A40A82F26C09DF3D0BF858C0BC0BCABEEBF50EBA03F1E7B3BBC9D1941BCB01327C0B0B04A3F17ADC83F3458E6BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c1 = "tosa.const"() <{values = dense<"0x9835284017E518C076BAA3BF6DFF0C404CCE2840DE6532C0D03CA7BFA3E13A4031BC0940F154EC3F49A92FC0CC9C08C0CD23BDBE8D274C3F10B0A7BF711ACEBFFD78E7BF001E573CF57F9BBD61BE1F3F"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0, %c1 : tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xi1> {
    %c = "tosa.const"() <{values = dense<[[ true,  true,  true,  true,  true], [false, false, false, false, false], [false, false, false, false, false], [false, false, false, false, false]]> : tensor<4x5xi1>}> : () -> tensor<4x5xi1>
    return %c : tensor<4x5xi1>
  }
}
