// Horizontal fusion of projections that read one input.
// RUN: tlm-opt %s --split-input-file --tlm-fuse-projections | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-fuse-projections="fuse-projections=false fuse-residual-adds=false" | FileCheck %s --check-prefix=OFF

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
#proj = {indexing_maps = [#x, #w, #o],
         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}

// Q, K and V (GQA: K and V narrower) become one projection over the
// concatenated weights; the attention reads slices of its result.
// OFF-LABEL: func.func @qkv
// OFF-NOT:     tensor.concat
// OFF-COUNT-3: linalg.generic
// CHECK-LABEL: func.func @qkv
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?x64xf32>, %[[WQ:.*]]: tensor<64x64xf32>, %[[WK:.*]]: tensor<32x64xf32>, %[[WV:.*]]: tensor<32x64xf32>)
// CHECK:         %[[W:.*]] = tensor.concat dim(0) %[[WQ]], %[[WK]], %[[WV]] : (tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<128x64xf32>
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x128xf32>
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x?x128xf32>)
// CHECK:         %[[QKV:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<?x?x64xf32>, tensor<128x64xf32>) outs(%[[Z]] : tensor<?x?x128xf32>)
// CHECK:         %[[Q:.*]] = tensor.extract_slice %[[QKV]][0, 0, 0] [%{{.*}}, %{{.*}}, 64] [1, 1, 1] : tensor<?x?x128xf32> to tensor<?x?x64xf32>
// CHECK:         %[[K:.*]] = tensor.extract_slice %[[QKV]][0, 0, 64] [%{{.*}}, %{{.*}}, 32] [1, 1, 1] : tensor<?x?x128xf32> to tensor<?x?x32xf32>
// CHECK:         %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 0, 96] [%{{.*}}, %{{.*}}, 32] [1, 1, 1] : tensor<?x?x128xf32> to tensor<?x?x32xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
               %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %eq = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %q = linalg.generic #proj ins(%x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%zq : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x64xf32>
  %ekv = tensor.empty(%b, %s) : tensor<?x?x32xf32>
  %zkv = linalg.fill ins(%zero : f32) outs(%ekv : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %k = linalg.generic #proj ins(%x, %wk : tensor<?x?x64xf32>, tensor<32x64xf32>)
      outs(%zkv : tensor<?x?x32xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x32xf32>
  %v = linalg.generic #proj ins(%x, %wv : tensor<?x?x64xf32>, tensor<32x64xf32>)
      outs(%zkv : tensor<?x?x32xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x32xf32>
  return %q, %k, %v : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
#proj = {indexing_maps = [#x, #w, #o],
         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}

// Must not fuse: %a reads another input than %b, %c accumulates into a
// residual (its result is not the projection alone), so each of %b and %d
// is alone with its input.
// CHECK-LABEL: func.func @unfusable
// CHECK-NOT:     tensor.concat
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT:     tensor.concat
func.func @unfusable(%x: tensor<?x?x64xf32>, %y: tensor<?x?x64xf32>,
                     %res: tensor<?x?x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
        tensor<?x?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %bs = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %e = tensor.empty(%bs, %s) : tensor<?x?x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a = linalg.generic #proj ins(%x, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %in, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x64xf32>
  %b = linalg.generic #proj ins(%y, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %in, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x64xf32>
  %c = linalg.generic #proj ins(%y, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%res : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %in, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x64xf32>
  // Reads %x like %a, but sums in another order: not the same payload.
  %d = linalg.generic #proj ins(%x, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %in, %bw : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<?x?x64xf32>
  return %a, %b, %c, %d : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
#id = affine_map<(b, s, d) -> (b, s, d)>
#proj = {indexing_maps = [#x, #w, #o],
         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
#add = {indexing_maps = [#id, #id, #id],
        iterator_types = ["parallel", "parallel", "parallel"]}

// The residual add after a projection: the projection accumulates into the
// residual and the add is gone. The second add stays twice over: %q is also
// returned, and so is the sum (in place in the residual it would alias the
// argument %r, and bufferization would copy it out). Off, both adds stay.
// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x?x64xf32>, %[[W:.*]]: tensor<64x64xf32>)
// CHECK:         %[[P:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<?x?x64xf32>, tensor<64x64xf32>) outs(%[[R]] : tensor<?x?x64xf32>)
// CHECK:         %[[Q:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[W]] : {{.*}}) outs(%{{.*}} : tensor<?x?x64xf32>)
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[Q]] : {{.*}})
// CHECK:           arith.addf
// CHECK:         return %[[S]], %[[Q]]
// OFF-LABEL: func.func @residual
// OFF-COUNT-2:   ins(%{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<?x?x64xf32>)
// OFF:           return
func.func @residual(%x: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>,
                    %w: tensor<64x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %p = linalg.generic #proj ins(%x, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %n = arith.addf %acc, %m : f32
    linalg.yield %n : f32
  } -> tensor<?x?x64xf32>
  %h = linalg.generic #add ins(%r, %p : tensor<?x?x64xf32>, tensor<?x?x64xf32>)
      outs(%r : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %b2: f32, %out: f32):
    %t = arith.addf %a, %b2 : f32
    linalg.yield %t : f32
  } -> tensor<?x?x64xf32>
  %q = linalg.generic #proj ins(%h, %w : tensor<?x?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %n = arith.addf %acc, %m : f32
    linalg.yield %n : f32
  } -> tensor<?x?x64xf32>
  %y = linalg.generic #add ins(%h, %q : tensor<?x?x64xf32>, tensor<?x?x64xf32>)
      outs(%h : tensor<?x?x64xf32>) {
  ^bb0(%a: f32, %b2: f32, %out: f32):
    %t = arith.addf %a, %b2 : f32
    linalg.yield %t : f32
  } -> tensor<?x?x64xf32>
  return %y, %q : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}
