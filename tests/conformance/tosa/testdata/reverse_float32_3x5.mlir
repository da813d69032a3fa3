// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<3x5xf32>) {
    %in = call @inputs() : () -> (tensor<3x5xf32>)
    %want = call @expected() : () -> tensor<3x5xf32>
    %r = "tosa.reverse"(%in) <{axis = 1 : i32}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<3x5xf32>, tensor<3x5xf32>) -> ()
    return %r : tensor<3x5xf32>
  }
  func.func private @inputs() -> (tensor<3x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0xB0713DC02BDD2AC0189831402544EC3F8B7218C00BB631405E830D40077329BE3C956FBEEE5F9C3F41D892BF803B9D3E61E3A63FBB2F14C016461E40"> : tensor<3x5xf32>}> : () -> tensor<3x5xf32>
    return %c0 : tensor<3x5xf32>
  }
  func.func private @expected() -> tensor<3x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x8B7218C02544EC3F189831402BDD2AC0B0713DC0EE5F9C3F3C956FBE077329BE5E830D400BB6314016461E40BB2F14C061E3A63F803B9D3E41D892BF"> : tensor<3x5xf32>}> : () -> tensor<3x5xf32>
    return %c : tensor<3x5xf32>
  }
}
