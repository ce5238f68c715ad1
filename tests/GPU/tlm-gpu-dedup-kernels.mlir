// RUN: tlm-opt %s --tlm-gpu-dedup-kernels | FileCheck %s

// Two identical kernels (one per layer, say) and a different one: the
// second copy goes and its launch uses the first.
// CHECK-LABEL: func.func @layers
// CHECK:         gpu.launch_func @f_kernel::@f_kernel
// CHECK:         gpu.launch_func @f_kernel::@f_kernel
// CHECK:         gpu.launch_func @f_kernel_1::@f_kernel
// CHECK:       gpu.module @f_kernel
// CHECK-NOT:   gpu.module @f_kernel_0
// CHECK:       gpu.module @f_kernel_1
module attributes {gpu.container_module} {
  func.func @layers(%a: memref<8xf32>, %b: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%b : memref<8xf32>)
    gpu.launch_func @f_kernel_1::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>)
    return
  }
  gpu.module @f_kernel {
    gpu.func @f_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    gpu.func @f_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  // Differs by one op (mulf): kept.
  gpu.module @f_kernel_1 {
    gpu.func @f_kernel(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<8xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
}
