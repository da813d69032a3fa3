// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xi32>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xi32>, tensor<4x5xi32>)
    %want = call @expected() : () -> tensor<4x5xi32>
    %r = "tosa.bitwise_and"(%in#0, %in#1) : (tensor<4x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xi32>, tensor<4x5xi32>) -> ()
    return %r : tensor<4x5xi32>
  }
  func.func private @inputs() -> (tensor<4x5xi32>, tensor<4x5xi32>) {
    %c0 = "tosa.const"() <{values = dense<[[-288,  699,  -26,  -54, -399], [ 798,  998,  742, -398, -293], [ 977,  365,  492, -312,  813], [ 994,  -66,  109, -838,  264]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    %c1 = "tosa.const"() <{values = dense<[[ -22,  376,  228,  -23,  665], [-516,  608, -662,  201,  947], [ 422,  -46,  672, -149, -627], [-654,  315,  751,  411, -371]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c0, %c1 : tensor<4x5xi32>, tensor<4x5xi32>
  }
  func.func private @expected() -> tensor<4x5xi32> {
    %c = "tosa.const"() <{values = dense<[[-288,   56,  228,  -56,  529], [ 284,  608,   98,   64,  659], [ 384,  320,  160, -440,  269], [ 354,  314,  109,  154,    8]]> : tensor<4x5xi32>}> : () -> tensor<4x5xi32>
    return %c : tensor<4x5xi32>
  }
}
