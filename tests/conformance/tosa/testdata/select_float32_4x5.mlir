// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in:3 = call @inputs() : () -> (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.select"(%in#0, %in#1, %in#2) : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<[[false,  true, false,  true,  true], [false, false,  true,  true,  true], [false, false, false,  true,  true], [ true, false,  true,  true, false]]> : tensor<4x5xi1>}> : () -> tensor<4x5xi1>
    %c1 = "tosa.const"() <{values = dense<"0xE444DBBF81CDA23F3FAE6A3FC44D1EBFE2B1B13F9CE8B2BFBDCD46BF924A673DEFA8084081AA89BF3EFA7BBF85542C3F31F5D93FCBF633402824023FEB00BD3FB6B7543E937922BE5BA72B409B4F2BC0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    %c2 = "tosa.const"() <{values = dense<"0x5417B83EA0D41DBFF09C3CC027C3F33F2BF73EBE8FA784BCEB3D054015D924C0FA422C40393715400F679EBE9A782AC04302BC3F95E30B4028502CC0E794503FB9BFEB3FD04702BE34261AC048572DC0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0, %c1, %c2 : tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0x5417B83E81CDA23FF09C3CC0C44D1EBFE2B1B13F8FA784BCEB3D0540924A673DEFA8084081AA89BF0F679EBE9A782AC04302BC3FCBF633402824023FEB00BD3FB9BFEB3F937922BE5BA72B4048572DC0"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
