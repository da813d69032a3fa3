// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xbf16>) {
    %in:2 = call @inputs() : () -> (tensor<4x5xbf16>, tensor<1x5xbf16>)
    %want = call @expected() : () -> tensor<4x5xbf16>
    %r = "tosa.maximum"(%in#0, %in#1) : (tensor<4x5xbf16>, tensor<1x5xbf16>) -> tensor<4x5xbf16>
    stablehlo.custom_call @check.expect_close(%r, %want) {has_side_effect = true} : (tensor<4x5xbf16>, tensor<4x5xbf16>) -> ()
    return %r : tensor<4x5xbf16>
  }
  func.func private @inputs() -> (tensor<4x5xbf16>, tensor<1x5xbf16>) {
    %c0 = "tosa.const"() <{values = dense<"0xC8BF0D40023F254057BF093F22C0FEBF06BE0EC0F0BF413EC7BF71BF993F21BE5A3F14C042BFD93F"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    %c1 = "tosa.const"() <{values = dense<"0xA9BE4BBF2AC03FC00640"> : tensor<1x5xbf16>}> : () -> tensor<1x5xbf16>
    return %c0, %c1 : tensor<4x5xbf16>, tensor<1x5xbf16>
  }
  func.func private @expected() -> tensor<4x5xbf16> {
    %c = "tosa.const"() <{values = dense<"0xA9BE0D40023F25400640093F4BBFFEBF06BE0640A9BE413EC7BF71BF064021BE5A3F14C042BF0640"> : tensor<4x5xbf16>}> : () -> tensor<4x5xbf16>
    return %c : tensor<4x5xbf16>
  }
}
