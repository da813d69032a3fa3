// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<4x5xf32>) {
    %in = call @inputs() : () -> (tensor<4x5xf32>)
    %want = call @expected() : () -> tensor<4x5xf32>
    %r = "tosa.sin"(%in) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    stablehlo.custom_call @check.expect_almost_eq(%r, %want) {has_side_effect = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> ()
    return %r : tensor<4x5xf32>
  }
  func.func private @inputs() -> (tensor<4x5xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x7F11D6BF3DF31A4030C0B3BCA18503C0CC50483FDFBCC53EE70BCE3FA25997BF5D7B18C056CE093F320ECEBE3858143DCECFE23F815ED03F4DCD9C3FDE880BBF979A07C0E99B39C0F9B9893F3AE089BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c0 : tensor<4x5xf32>
  }
  func.func private @expected() -> tensor<4x5xf32> {
    %c = "tosa.const"() <{values = dense<"0xF5AD7EBFE5E5283F7FBCB3BC6C9162BFA87D343FD3DBC03E51CE7F3F49EF6CBFA23030BF133F033FB689C8BEEB4F143D5CD67A3F3D957F3FFED8703F41BA04BFF7825ABFE3D974BE984B613FE26F61BF"> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
    return %c : tensor<4x5xf32>
  }
}
