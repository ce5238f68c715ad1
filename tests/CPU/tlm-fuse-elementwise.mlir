// RUN: tlm-opt %s --split-input-file --tlm-fuse-elementwise | FileCheck %s
// RUN: not tlm-opt %s --split-input-file --tlm-fuse-elementwise=lanes=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-fuse-elementwise: lanes must be >= 1, got 0

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A chain of three elementwise ops, each read once (SwiGLU's backward
// shape: silu'(a)·b·dy, then a fan-out sum): one generic, the payloads in
// order.
// CHECK-LABEL: func.func @chain
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%arg0, %arg1, %arg2, %arg3 :
// CHECK:           arith.negf
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         }
// CHECK-NOT:     linalg.generic
func.func @chain(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>,
                 %dy: tensor<?x64xf32>, %r: tensor<?x64xf32>)
    -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    linalg.yield %ex : f32
  } -> tensor<?x64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%t, %b, %dy : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
         outs(%e : tensor<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.mulf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<?x64xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%u, %r : tensor<?x64xf32>, tensor<?x64xf32>)
         outs(%e : tensor<?x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.addf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// Left apart: a value two ops read (fusing would compute it twice), a
// reduction reading an elementwise value (tlm-vectorize-elementwise's row
// form takes it), a residual add reading a projection (tlm-fuse-projections
// folds it in), and RMSNorm's scaling (folded into the projection that
// reads it).
// CHECK-LABEL: func.func @kept_apart
// CHECK-COUNT-8: linalg.generic
// CHECK-NOT:     linalg.generic
func.func @kept_apart(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>,
                      %rms: tensor<?xf32>, %g: tensor<64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id],
                        iterator_types = ["parallel", "parallel"]}
          ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %p = arith.mulf %v, %v : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %plus = linalg.generic {indexing_maps = [#id, #id, #id],
                          iterator_types = ["parallel", "parallel"]}
             ins(%sq, %x : tensor<?x64xf32>, tensor<?x64xf32>)
             outs(%e : tensor<?x64xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %p = arith.addf %u, %v : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %minus = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel"]}
             ins(%sq, %x : tensor<?x64xf32>, tensor<?x64xf32>)
             outs(%e : tensor<?x64xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %p = arith.subf %u, %v : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %er = tensor.empty(%m) : tensor<?xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%plus : tensor<?x64xf32>) outs(%fr : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %proj = linalg.matmul indexing_maps = [#a, #b, #c]
            ins(%x, %w : tensor<?x64xf32>, tensor<64x64xf32>)
            outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<?x64xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%neg, %proj : tensor<?x64xf32>, tensor<?x64xf32>)
           outs(%e : tensor<?x64xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %p = arith.addf %u, %v : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %half = linalg.generic {indexing_maps = [#id, #id],
                          iterator_types = ["parallel", "parallel"]}
            ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = arith.constant 0.5 : f32
    %p = arith.mulf %v, %c : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %norm = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                          iterator_types = ["parallel", "parallel"]}
            ins(%half, %rms, %g : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>)
            outs(%e : tensor<?x64xf32>) {
  ^bb0(%v: f32, %r: f32, %gv: f32, %o: f32):
    %d = arith.divf %v, %r : f32
    %p = arith.mulf %d, %gv : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  return %minus, %res, %sum, %norm
      : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?xf32>, tensor<?x64xf32>
}
