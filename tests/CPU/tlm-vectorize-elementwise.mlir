// RUN: tlm-opt %s --split-input-file --tlm-vectorize-elementwise --canonicalize | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-vectorize-elementwise=threads=2 --canonicalize | FileCheck %s --check-prefix=THREADS
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-vectorize-elementwise=lanes=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-vectorize-elementwise: lanes must be >= 1, got 0
// One lane is a vector too: every op still lowers, the rotation (which
// needs a pair a vector) left to the generic path, no SIGFPE.
// RUN: tlm-opt %s --split-input-file --tlm-vectorize-elementwise=lanes=1 | FileCheck %s --check-prefix=ONELANE

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// An elementwise op with dynamic rows and a static innermost dim of 64:
// rows one at a time, 16 lanes at a time, as vector<1x16xf32> ops; the
// broadcast operand (a per-column scale) is read along the lanes.
// CHECK-LABEL: func.func @scale_add
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:             vector.transfer_read {{.*}} : tensor<?x64xf32>, vector<1x16xf32>
// CHECK:             arith.mulf {{.*}} : vector<1x16xf32>
// CHECK:             arith.addf {{.*}} : vector<1x16xf32>
// CHECK:             vector.transfer_write {{.*}} : vector<1x16xf32>, tensor<?x64xf32>
// CHECK-NOT:     linalg.generic
// With threads, the blocks are the iterations of one forall (an OpenMP
// loop later), each writing its own 1 x 16 slice.
// THREADS-LABEL: func.func @scale_add
// THREADS:         scf.forall (%[[R:.*]], %[[C:.*]]) = (0, 0) to (%{{.*}}, 64) step (1, 16)
// THREADS:           arith.mulf {{.*}} : vector<1x16xf32>
// THREADS:           scf.forall.in_parallel
// THREADS:             tensor.parallel_insert_slice %{{.*}}[%[[R]], %[[C]]] [1, 16]
// THREADS-NOT:   scf.for %
func.func @scale_add(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>,
                     %g: tensor<64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b, %g : tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xf32>)
         outs(%e : tensor<?x64xf32>) {
  ^bb0(%x: f32, %z: f32, %s: f32, %o: f32):
    %p = arith.mulf %x, %s : f32
    %q = arith.addf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A reduction into sums that do not start from a fill takes the row form
// below, each row starting from its own value; an innermost dim that is not
// a multiple of 16 is left alone.
// CHECK-LABEL: func.func @not_elementwise
// CHECK:         scf.forall (%[[ROW:arg[0-9]+]]) in
// CHECK:           %[[START:.*]] = tensor.extract %{{.*}}[%[[ROW]]] : tensor<?xf32>
// CHECK:           vector.reduction <add>, %{{.*}}, %[[START]]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT:     vector.
// THREADS-LABEL: func.func @not_elementwise
func.func @not_elementwise(%a: tensor<?x64xf32>, %r: tensor<?xf32>,
                           %b: tensor<?x24xf32>)
    -> (tensor<?xf32>, tensor<?x24xf32>) {
  %sum = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%a : tensor<?x64xf32>) outs(%r : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %b, %c0 : tensor<?x24xf32>
  %e = tensor.empty(%m) : tensor<?x24xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%b : tensor<?x24xf32>) outs(%e : tensor<?x24xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<?x24xf32>
  return %sum, %neg : tensor<?xf32>, tensor<?x24xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#same = affine_map<(d0) -> (d0)>

// RMSNorm's statistics as the lowering builds them: Σ x² per row from a
// fill, then sqrt(Σ / d + eps) elementwise. One loop over the rows: 16
// partial sums carried over k in one vector, added across lanes to the
// fill's value, the epilogue on that scalar, one element stored.
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME:    (%[[A:.*]]: tensor<?x64xf32>)
// CHECK:         scf.forall (%[[R:arg[0-9]+]]) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xf32>)
// CHECK:           %[[ACC:.*]] = scf.for %[[K:arg[0-9]+]] = %c0 to %c64 step %c16 iter_args(%[[V:.*]] = %{{.*}}) -> (vector<16xf32>)
// CHECK:             %[[X:.*]] = vector.transfer_read %[[A]][%[[R]], %[[K]]]{{.*}} : tensor<?x64xf32>, vector<16xf32>
// CHECK:             %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : vector<16xf32>
// CHECK:             %[[NEXT:.*]] = arith.addf %[[SQ]], %[[V]] : vector<16xf32>
// CHECK:             scf.yield %[[NEXT]]
// CHECK:           %[[S:.*]] = vector.reduction <add>, %[[ACC]], %[[START:.*]] : vector<16xf32> into f32
// CHECK:           %[[MEAN:.*]] = arith.divf %[[S]]
// CHECK:           %[[RMS:.*]] = math.sqrt
// CHECK:           tensor.insert %[[RMS]]
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.*}}[%[[R]]] [1] [1]
// CHECK-NOT:     linalg.
// THREADS-LABEL: func.func @row_sum
// THREADS:         scf.forall
// THREADS:           vector.reduction <add>
// THREADS-NOT:   linalg.
func.func @row_sum(%a: tensor<?x64xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = arith.constant 64.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%a : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%m) : tensor<?xf32>
  %rms = linalg.generic {indexing_maps = [#same, #same],
                         iterator_types = ["parallel"]}
           ins(%sum : tensor<?xf32>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%s: f32, %o: f32):
    %mean = arith.divf %s, %d : f32
    %me = arith.addf %mean, %eps : f32
    %r = math.sqrt %me : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  return %rms : tensor<?xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A row sum read twice has no epilogue to take: its loop stores the sums,
// and the readers stay as they are. A running max takes the same form with
// max lanes. A payload that reads the iteration index is
// left alone (it would leave its generic), and so is one that computes on
// integers.
// CHECK-LABEL: func.func @row_sum_two_readers
// CHECK:         %[[SUMS:.*]] = scf.forall
// CHECK:           vector.reduction <add>
// CHECK-NOT:       math.sqrt
// CHECK:           tensor.parallel_insert_slice
// CHECK:         scf.forall
// CHECK:           arith.maximumf {{.*}} : vector<16xf32>
// CHECK:           vector.reduction <maximumf>
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           linalg.index 1
// CHECK:         return %[[SUMS]], %[[SUMS]], %{{.*}}, %{{.*}}
// THREADS-LABEL: func.func @row_sum_two_readers
// THREADS:         scf.forall
// THREADS:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
func.func @row_sum_two_readers(%a: tensor<?x64xf32>)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%a : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%a : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %weighted = linalg.generic {indexing_maps = [#id, #row],
                              iterator_types = ["parallel", "reduction"]}
                ins(%a : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %p = arith.mulf %x, %kf : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %sum, %sum, %max, %weighted
      : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The residual add as the lowering writes it, into one of its inputs
// (outs(%a)) without reading it: the blocks write a fresh tensor.empty
// instead, so bufferization does not copy %a first.
// CHECK-LABEL: func.func @unread_output
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<?x32xf32>
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[E]])
// CHECK:           arith.addf {{.*}} : vector<1x16xf32>
// THREADS-LABEL: func.func @unread_output
// THREADS:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// THREADS:         scf.forall {{.*}} shared_outs(%{{.*}} = %[[E]])
func.func @unread_output(%a: tensor<?x32xf32>, %b: tensor<?x32xf32>)
    -> tensor<?x32xf32> {
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b : tensor<?x32xf32>, tensor<?x32xf32>)
         outs(%a : tensor<?x32xf32>) {
  ^bb0(%x: f32, %z: f32, %o: f32):
    %s = arith.addf %x, %z : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// RoPE's rotation as tlm-lower-to-linalg builds it: x viewed as
// (batch, seq, heads, pairs, 2), each half read through a constant map
// result, the tables indexed by (seq, pair). One tile (a 1 x 1 x 2 x 16 x 2
// slice of the output: the static heads whole) per (batch, seq) row, its
// heads in a loop of its own, and per head a loop over blocks of 16 lanes
// (8 pairs; one copy of the block's code): one contiguous read of x, its
// pairs swapped by a shuffle, cos duplicated per pair and sin negated in the
// even lanes: x·cos' + swap(x)·sin'.
// CHECK-LABEL: func.func @rope
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?x2x16x2xf32>, %[[COS:.*]]: tensor<?x16xf32>, %[[SIN:.*]]: tensor<?x16xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for %[[B:.*]] = %c0 to %{{.*}} step %c1
// CHECK:           scf.for %[[S:.*]] = %c0 to %{{.*}} step %c1
// CHECK:             %[[TILE:.*]] = tensor.extract_slice %{{.*}}[%[[B]], %[[S]], 0, 0, 0] [1, 1, 2, 16, 2]
// CHECK:             scf.for %[[H:.*]] = %c0 to %c2 step %c1 iter_args(%[[T:.*]] = %[[TILE]])
// CHECK:               scf.for %[[P:.*]] = %c0 to %c16 step %c8 iter_args(%[[TP:.*]] = %[[T]])
// CHECK:                 %[[XV:.*]] = vector.transfer_read %[[X]][%[[B]], %[[S]], %[[H]], %[[P]], %c0]{{.*}} : tensor<?x?x2x16x2xf32>, vector<8x2xf32>
// CHECK:                 %[[XF:.*]] = vector.shape_cast %[[XV]] : vector<8x2xf32> to vector<16xf32>
// CHECK:                 %[[C:.*]] = vector.transfer_read %[[COS]][%[[S]], %[[P]]]{{.*}} : tensor<?x16xf32>, vector<8xf32>
// CHECK:                 %[[SV:.*]] = vector.transfer_read %[[SIN]][%[[S]], %[[P]]]{{.*}} : tensor<?x16xf32>, vector<8xf32>
// CHECK:                 %[[CC:.*]] = vector.interleave %[[C]], %[[C]] : vector<8xf32> -> vector<16xf32>
// CHECK:                 %[[NEG:.*]] = arith.negf %[[SV]] : vector<8xf32>
// CHECK:                 %[[SS:.*]] = vector.interleave %[[NEG]], %[[SV]] : vector<8xf32> -> vector<16xf32>
// CHECK:                 %[[SW:.*]] = vector.shuffle %[[XF]], %[[XF]] [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14]
// CHECK:                 %[[XC:.*]] = arith.mulf %[[XF]], %[[CC]] : vector<16xf32>
// CHECK:                 %[[WS:.*]] = arith.mulf %[[SW]], %[[SS]] : vector<16xf32>
// CHECK:                 %[[R:.*]] = arith.addf %[[XC]], %[[WS]] : vector<16xf32>
// CHECK:                 %[[RV:.*]] = vector.shape_cast %[[R]] : vector<16xf32> to vector<8x2xf32>
// CHECK:                 %[[W:.*]] = vector.transfer_write %[[RV]], %[[TP]][%c0, %c0, %[[H]], %[[P]], %c0] {{.*}} : vector<8x2xf32>, tensor<1x1x2x16x2xf32>
// CHECK:                 scf.yield %[[W]]
// CHECK-NOT:           vector.transfer_read
// THREADS-LABEL: func.func @rope
// THREADS:         scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, %{{.*}})
// THREADS:           vector.shuffle
// ONELANE-LABEL: func.func @rope
// ONELANE:         linalg.generic
// ONELANE-NOT:     vector.shuffle
#x0 = affine_map<(b, s, h, i, c) -> (b, s, h, i, 0)>
#x1 = affine_map<(b, s, h, i, c) -> (b, s, h, i, 1)>
#t = affine_map<(b, s, h, i, c) -> (s, i)>
#id5 = affine_map<(b, s, h, i, c) -> (b, s, h, i, c)>
func.func @rope(%x: tensor<?x?x2x16x2xf32>, %cos: tensor<?x16xf32>,
                %sin: tensor<?x16xf32>) -> tensor<?x?x2x16x2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x2x16x2xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x2x16x2xf32>
  %e = tensor.empty(%b, %s) : tensor<?x?x2x16x2xf32>
  %r = linalg.generic {indexing_maps = [#x0, #x1, #t, #t, #id5],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<?x?x2x16x2xf32>, tensor<?x?x2x16x2xf32>,
                               tensor<?x16xf32>, tensor<?x16xf32>)
      outs(%e : tensor<?x?x2x16x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %c: f32, %sn: f32, %o: f32):
    %ac = arith.mulf %a, %c : f32
    %bs = arith.mulf %bb, %sn : f32
    %first = arith.subf %ac, %bs : f32
    %as = arith.mulf %a, %sn : f32
    %bc = arith.mulf %bb, %c : f32
    %second = arith.addf %as, %bc : f32
    %which = linalg.index 4 : index
    %zero = arith.constant 0 : index
    %is0 = arith.cmpi eq, %which, %zero : index
    %y = arith.select %is0, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<?x?x2x16x2xf32>
  return %r : tensor<?x?x2x16x2xf32>
}

// -----

// Not the rotation (the first half adds where RoPE subtracts): left alone,
// as is any generic whose innermost loop is not a multiple of the lanes.
// CHECK-LABEL: func.func @not_rope
// CHECK:         linalg.generic
// CHECK-NOT:     vector.shuffle
#x0 = affine_map<(b, s, h, i, c) -> (b, s, h, i, 0)>
#x1 = affine_map<(b, s, h, i, c) -> (b, s, h, i, 1)>
#t = affine_map<(b, s, h, i, c) -> (s, i)>
#id5 = affine_map<(b, s, h, i, c) -> (b, s, h, i, c)>
func.func @not_rope(%x: tensor<?x?x2x16x2xf32>, %cos: tensor<?x16xf32>,
                    %sin: tensor<?x16xf32>) -> tensor<?x?x2x16x2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x2x16x2xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x2x16x2xf32>
  %e = tensor.empty(%b, %s) : tensor<?x?x2x16x2xf32>
  %r = linalg.generic {indexing_maps = [#x0, #x1, #t, #t, #id5],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<?x?x2x16x2xf32>, tensor<?x?x2x16x2xf32>,
                               tensor<?x16xf32>, tensor<?x16xf32>)
      outs(%e : tensor<?x?x2x16x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %c: f32, %sn: f32, %o: f32):
    %ac = arith.mulf %a, %c : f32
    %bs = arith.mulf %bb, %sn : f32
    %first = arith.addf %ac, %bs : f32
    %as = arith.mulf %a, %sn : f32
    %bc = arith.mulf %bb, %c : f32
    %second = arith.addf %as, %bc : f32
    %which = linalg.index 4 : index
    %zero = arith.constant 0 : index
    %is0 = arith.cmpi eq, %which, %zero : index
    %y = arith.select %is0, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<?x?x2x16x2xf32>
  return %r : tensor<?x?x2x16x2xf32>
}

// -----

// A transpose that keeps the innermost dim (the new cache rows' batch/seq
// swap) is copied 16 lanes at a time; one that moves it is left alone.
// CHECK-LABEL: func.func @transposes
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:               vector.transfer_read {{.*}} : tensor<?x?x64xf32>, vector<1x1x16xf32>
// CHECK:               vector.transfer_write {{.*}} : vector<1x1x16xf32>, tensor<?x?x64xf32>
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<?x64xf32>) outs(%{{.*}} : tensor<64x?xf32>) permutation = [1, 0]
func.func @transposes(%x: tensor<?x?x64xf32>, %y: tensor<?x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<64x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %e = tensor.empty(%s, %b) : tensor<?x?x64xf32>
  %t = linalg.transpose ins(%x : tensor<?x?x64xf32>)
         outs(%e : tensor<?x?x64xf32>) permutation = [1, 0, 2]
  %n = tensor.dim %y, %c0 : tensor<?x64xf32>
  %f = tensor.empty(%n) : tensor<64x?xf32>
  %u = linalg.transpose ins(%y : tensor<?x64xf32>)
         outs(%f : tensor<64x?xf32>) permutation = [1, 0]
  return %t, %u : tensor<?x?x64xf32>, tensor<64x?xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Inputs read by the rows (one scalar a row, broadcast) and by k (one
// vector for every row) beside the whole one: the cross-entropy's
// Σ exp(x − max) and RMSNorm's backward Σ dy·g·x̂.
// CHECK-LABEL: func.func @row_and_column_inputs
// CHECK:         scf.forall (%[[R:arg[0-9]+]]) in
// CHECK:           %[[M:.*]] = tensor.extract %{{.*}}[%[[R]]] : tensor<?xf32>
// CHECK:           %[[MV:.*]] = vector.broadcast %[[M]] : f32 to vector<16xf32>
// CHECK:           scf.for %[[K:arg[0-9]+]] =
// CHECK:             %[[X:.*]] = vector.transfer_read %{{.*}}[%[[R]], %[[K]]]
// CHECK:             arith.subf %[[X]], %[[MV]] : vector<16xf32>
// CHECK:             math.exp {{.*}} : vector<16xf32>
// CHECK:           vector.reduction <add>
// CHECK:         scf.forall (%[[R2:arg[0-9]+]]) in
// CHECK:           scf.for %[[K2:arg[0-9]+]] =
// CHECK:             vector.transfer_read %{{.*}}[%[[R2]], %[[K2]]]
// CHECK:             vector.transfer_read %{{.*}}[%[[K2]]]
// CHECK:           vector.reduction <add>
func.func @row_and_column_inputs(%x: tensor<?x64xf32>, %max: tensor<?xf32>,
                                 %g: tensor<64xf32>)
    -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%x, %max : tensor<?x64xf32>, tensor<?xf32>)
           outs(%init : tensor<?xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %d = arith.subf %a, %mx : f32
    %ex = math.exp %d : f32
    %s = arith.addf %ex, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %dot = linalg.generic {indexing_maps = [#id, #col, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%x, %g : tensor<?x64xf32>, tensor<64xf32>)
           outs(%init : tensor<?xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %p = arith.mulf %a, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %sum, %dot : tensor<?xf32>, tensor<?xf32>
}

// -----

#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3 = affine_map<(d0, d1, d2) -> (d2)>

// A column sum (the RMSNorm gain's gradient, Σ over (batch, seq) of
// dy·x̂): the rows one at a time in plain loops (never a forall, even with
// threads: every block adds into the same output), 16 columns a vector.
// CHECK-LABEL: func.func @column_sum
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:               vector.transfer_read {{.*}} vector<1x1x16xf32>
// CHECK:               arith.mulf {{.*}} vector<1x1x16xf32>
// CHECK:               arith.addf {{.*}} : vector<16xf32>
// CHECK:               vector.transfer_write {{.*}} : vector<16xf32>, tensor<64xf32>
// CHECK-NOT:     linalg.generic
// THREADS-LABEL: func.func @column_sum
// THREADS-NOT:     scf.forall
// THREADS:         arith.addf {{.*}} : vector<16xf32>
func.func @column_sum(%dy: tensor<2x?x64xf32>, %x: tensor<2x?x64xf32>)
    -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %dg = linalg.generic {indexing_maps = [#x3, #x3, #k3],
                        iterator_types = ["reduction", "reduction", "parallel"]}
          ins(%dy, %x : tensor<2x?x64xf32>, tensor<2x?x64xf32>)
          outs(%init : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %dg : tensor<64xf32>
}
