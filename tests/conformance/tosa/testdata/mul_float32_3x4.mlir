// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<3x4xf32>) {
    %in:2 = call @inputs() : () -> (tensor<3x4xf32>, tensor<3x4xf32>)
    %want = call @expected() : () -> tensor<3x4xf32>
    %s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %r = "tosa.mul"(%in#0, %in#1, %s) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xi8>) -> tensor<3x4xf32>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    return %r : tensor<3x4xf32>
  }
  func.func private @inputs() -> (tensor<3x4xf32>, tensor<3x4xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x5C225C3F526293BF905B02C082D28C3F57C80240748DD7BF671FD8BF038C97BF55DBB4BEDDA1FABF74E89BBF352097BF"> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
    %c1 = "tosa.const"() <{values = dense<"0xC2C6364076CAB6BE337931C0F2E526C0B8B738409E3EBFBF76E3C4BF702E0340C207A1BFB324DCBFB0624B3F1CA5933F"> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
    return %c0, %c1 : tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @expected() -> tensor<3x4xf32> {
    %c = "tosa.const"() <{values = dense<"0x572B1D40EC78D23E0CBEB440FB9D37C0B3BBBC40430721401238264046501BC0D786E33E08875740DCBA77BFED51AEBF"> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
    return %c : tensor<3x4xf32>
  }
}
