// RUN: stablehlo-opt -inline %s | stablehlo-translate --interpret
// RUN: stablehlo-translate --serialize --target=current %s | stablehlo-translate --deserialize | stablehlo-opt > %t.0
// RUN: stablehlo-opt %s > %t.1
// RUN: diff %t.0 %t.1

module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<1xf16> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = call @inputs() : () -> tensor<3xf16>
    %1 = call @expected() : () -> tensor<1xf16>
    %2 = stablehlo.slice %0 [1:2] : (tensor<3xf16>) -> tensor<1xf16>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<1xf16>, tensor<1xf16>) -> ()
    return %2 : tensor<1xf16>
  }
  func.func private @inputs() -> (tensor<3xf16> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[-2.548830e+00, -2.855470e+00, -9.501950e-01]> : tensor<3xf16>
    return %cst : tensor<3xf16>
  }
  func.func private @expected() -> (tensor<1xf16> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<-2.855470e+00> : tensor<1xf16>
    return %cst : tensor<1xf16>
  }
}
