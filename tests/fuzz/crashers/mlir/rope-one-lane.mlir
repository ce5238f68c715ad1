//opts lanes=1
module {
  func.func private @head(%arg0: tensor<?x?x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>) -> tensor<?x?x64xf32> attributes {no_inline, passthrough = ["noinline"]} {
    %0 = tlm.rmsnorm %arg0, %arg1 : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
    %1 = tlm.linear %0, %arg2 : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    return %1 : tensor<?x?x64xf32>
  }
  func.func private @block_cached(%arg0: tensor<?x?x64xf32>, %arg1: tensor<?xi64>, %arg2: tensor<?x?x32xf32>, %arg3: tensor<?x?x32xf32>, %arg4: tensor<64x64xf32>, %arg5: tensor<32x64xf32>, %arg6: tensor<32x64xf32>, %arg7: tensor<64x64xf32>, %arg8: tensor<64xf32>, %arg9: tensor<128x64xf32>, %arg10: tensor<64x128xf32>, %arg11: tensor<128x64xf32>, %arg12: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) attributes {no_inline, passthrough = ["noinline"]} {
    %0 = tlm.rmsnorm %arg0, %arg8 : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
    %1 = tlm.linear %0, %arg4 : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %2 = tlm.linear %0, %arg5 : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
    %3 = tlm.linear %0, %arg6 : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
    %result, %k_new, %v_new = tlm.cached_attention %1, %2, %3, %arg2, %arg3, %arg1 {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
    %4 = tlm.linear %result, %arg7 : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %5 = arith.addf %arg0, %4 : tensor<?x?x64xf32>
    %6 = tlm.rmsnorm %5, %arg12 : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
    %7 = tlm.swiglu %6, %arg9, %arg10, %arg11 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
    %8 = arith.addf %5, %7 : tensor<?x?x64xf32>
    return %8, %k_new, %v_new : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
  func.func @prefill(%arg0: tensor<?x?xi64>, %arg1: tensor<?xi64>, %arg2: tensor<?x?x32xf32>, %arg3: tensor<?x?x32xf32>, %arg4: tensor<64x64xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<32x64xf32>, %arg7: tensor<32x64xf32>, %arg8: tensor<64x64xf32>, %arg9: tensor<64xf32>, %arg10: tensor<128x64xf32>, %arg11: tensor<64x128xf32>, %arg12: tensor<128x64xf32>, %arg13: tensor<64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    %0 = tlm.embedding %arg0, %arg4 : tensor<?x?xi64>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %1:3 = call @block_cached(%0, %arg1, %arg2, %arg3, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13) : (tensor<?x?x64xf32>, tensor<?xi64>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
    %2 = call @head(%1#0, %arg14, %arg15) : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
    return %2, %1#1, %1#2 : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
  func.func @decode(%arg0: tensor<?x?xi64>, %arg1: tensor<?xi64>, %arg2: tensor<?x?x32xf32>, %arg3: tensor<?x?x32xf32>, %arg4: tensor<64x64xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<32x64xf32>, %arg7: tensor<32x64xf32>, %arg8: tensor<64x64xf32>, %arg9: tensor<64xf32>, %arg10: tensor<128x64xf32>, %arg11: tensor<64x128xf32>, %arg12: tensor<128x64xf32>, %arg13: tensor<64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64x64xf32>) -> (tensor<?x1x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    %0 = tlm.embedding %arg0, %arg4 : tensor<?x?xi64>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %1:3 = call @block_cached(%0, %arg1, %arg2, %arg3, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13) : (tensor<?x?x64xf32>, tensor<?xi64>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
    %c1 = arith.constant 1 : index
    %dim = tensor.dim %1#0, %c1 : tensor<?x?x64xf32>
    %c1_0 = arith.constant 1 : index
    %2 = arith.subi %dim, %c1_0 : index
    %c0 = arith.constant 0 : index
    %dim_1 = tensor.dim %1#0, %c0 : tensor<?x?x64xf32>
    %extracted_slice = tensor.extract_slice %1#0[0, %2, 0] [%dim_1, 1, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x1x64xf32>
    %3 = tensor.empty(%dim_1) : tensor<?x1x64xf32>
    %4 = linalg.copy ins(%extracted_slice : tensor<?x1x64xf32>) outs(%3 : tensor<?x1x64xf32>) -> tensor<?x1x64xf32>
    %cast = tensor.cast %4 : tensor<?x1x64xf32> to tensor<?x?x64xf32>
    %5 = call @head(%cast, %arg14, %arg15) : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
    %cast_2 = tensor.cast %5 : tensor<?x?x64xf32> to tensor<?x1x64xf32>
    return %cast_2, %1#1, %1#2 : tensor<?x1x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }
}

