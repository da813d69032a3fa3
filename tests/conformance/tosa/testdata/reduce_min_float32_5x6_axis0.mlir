// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<1x6xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<1x6xf32>
    %r = "tosa.reduce_min"(%in) <{axis = 0 : i32}> : (tensor<5x6xf32>) -> tensor<1x6xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<1x6xf32>, tensor<1x6xf32>) -> ()
    return %r : tensor<1x6xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x46EC1A40084A3B40E2131ABFA2BE0B3F8713F43F4BF40140E3189F3F47BEE43F971F22C0B5F7CB3F4FE13CC0AB519EBF6039F3BED0E89FBF62313BC09AFB29C0BECBCCBE6841EABF39773E3E89CE29C056E8723F64D135C019F409C025939BBF692C0B40E5A5B33F2F3933C0F74D20C0ED7E953FC5D21EC0"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<1x6xf32> {
    %c = "tosa.const"() <{values = dense<"0x6039F3BE89CE29C062313BC064D135C04FE13CC0C5D21EC0"> : tensor<1x6xf32>}> : () -> tensor<1x6xf32>
    return %c : tensor<1x6xf32>
  }
}
