// A generated TOSA case (tests/conformance/tosa/generate.py); checked as StableHLO's testdata are.
module {
  func.func public @main() -> (tensor<5x1xf32>) {
    %in = call @inputs() : () -> (tensor<5x6xf32>)
    %want = call @expected() : () -> tensor<5x1xf32>
    %r = "tosa.reduce_max"(%in) <{axis = 1 : i32}> : (tensor<5x6xf32>) -> tensor<5x1xf32>
    stablehlo.custom_call @check.expect_eq(%r, %want) {has_side_effect = true} : (tensor<5x1xf32>, tensor<5x1xf32>) -> ()
    return %r : tensor<5x1xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32>) {
    %c0 = "tosa.const"() <{values = dense<"0x9E6D553F4E66593F9AF1E53F670D0F40A752FABF69D0323F8950B2BF08D11A40932E00C07582E63F6D888A3F75DDC7BE489808C069C0B1BFE303EF3F93A32F40528410BF9F1A28C006FDAABF71580CC093DCD43F6F45CF3C01EE17401226B7BEF4C31A40FC3136C07D2B3DC0E8620FC05FE7FA3FD37150BF"> : tensor<5x6xf32>}> : () -> tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> tensor<5x1xf32> {
    %c = "tosa.const"() <{values = dense<"0x670D0F4008D11A4093A32F4001EE1740F4C31A40"> : tensor<5x1xf32>}> : () -> tensor<5x1xf32>
    return %c : tensor<5x1xf32>
  }
}
