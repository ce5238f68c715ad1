//===- PrefillAttention.cpp - tlm-gpu-prefill-attention -------------------===//
//
// Prefill's attention as one flash-attention kernel: a block of 4 warps per
// (`rows` queries, head, sequence) walks the keys its last query sees in
// tiles of 32, staged with their values in shared memory; each warp keeps
// its queries' running max, sum of exponentials and output in registers
// (the online softmax), so no score tensor is written. Built on tensors,
// before the conversion (AttentionKernels.h).
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/gpu/AttentionKernels.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

#define DEBUG_TYPE "tlm-gpu-prefill-attention"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUPREFILLATTENTION
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

constexpr int64_t kWarps = 4;    // a block
constexpr int64_t kKeys = kWarp; // a tile: lane l scores key l

/// The kernel's shared memory, in floats: the block's queries (rows x dk),
/// a tile of keys (rows of `keyStride` floats: lane l reads row l, column
/// d, and an odd stride puts the 32 lanes on 32 banks) and of values, and
/// each query's probabilities for the tile.
struct SharedLayout {
  int64_t keyStride, qs, ks, vs, ps, floats;
};
SharedLayout sharedLayout(int64_t rows, int64_t dk) {
  SharedLayout s;
  s.keyStride = dk % 2 ? dk + 2 : dk + 1;
  s.qs = 0;
  s.ks = s.qs + rows * dk;
  s.vs = s.ks + kKeys * s.keyStride;
  s.ps = s.vs + kKeys * dk;
  s.floats = s.ps + rows * kKeys;
  return s;
}

/// What the steps of the kernel's body share.
struct PrefillBody {
  const AttentionBuffers &in;
  int64_t rows, dk, perWarp, dims, threads;
  Value rowCount, h, seq, lane, warp, qs, ks, vs, ps, out;
  // Worked out by the steps:
  Value c0{}, cdk{}, zero{}, minusInf{}, scale{};
  Value tid{};      ///< the thread's index in the block
  Value kvh{};      ///< the kv head of h
  Value past{};     ///< the sequence's cached positions
  Value q0{};       ///< the block's first query
  Value keyCount{}; ///< the keys its last query sees
  Value tiles{};    ///< tiles of them
  /// The warp's queries (their rows of the block and their index) and the
  /// lane's head dims (and those clamped below dk, to read).
  SmallVector<Value> rowOf{}, query{}, dimOf{}, dimIdx{};
};

/// The thread's index, the kv head, the block's first query, keys and tiles.
void placeBlock(OpBuilder &b, Location loc, PrefillBody &k, Value qBlock) {
  const AttentionBuffers &in = k.in;
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  Value rowCount = k.rowCount;
  int64_t rows = k.rows;
  k.tid = add(arith::MulIOp::create(b, loc, k.warp, c(kWarp)), k.lane);
  k.kvh = arith::DivUIOp::create(b, loc, k.h, c(in.group));
  k.past = sequencePast(b, loc, in, k.seq);
  Value q0 = k.q0 = arith::MulIOp::create(b, loc, qBlock, c(rows));
  Value here = arith::MinUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, rowCount, q0), c(rows));
  // Query past + i sees keys 0..past + i: the block's last one, keyCount.
  k.keyCount = add(k.past, add(q0, here));
  k.tiles = arith::CeilDivUIOp::create(b, loc, k.keyCount, c(kKeys));
}

/// The block's queries staged in `qs`, zero past S.
void stageQueries(OpBuilder &b, Location loc, const PrefillBody &k) {
  const AttentionBuffers &in = k.in;
  Value cdk = k.cdk;
  scf::ForOp::create(
      b, loc, k.tid, index(b, loc, k.rows * k.dk), index(b, loc, k.threads),
      ValueRange{}, [&](OpBuilder &nb, Location nl, Value f, ValueRange) {
        Value r = arith::DivUIOp::create(nb, nl, f, cdk);
        Value d = arith::RemUIOp::create(nb, nl, f, cdk);
        Value qi = arith::AddIOp::create(nb, nl, k.q0, r);
        Value v = guardedLoad(nb, nl, lessThan(nb, nl, qi, k.rowCount), in.q,
                              ValueRange{k.seq, qi, k.h, d}, k.zero);
        memref::StoreOp::create(nb, nl, v, k.qs, ValueRange{r, d});
        scf::YieldOp::create(nb, nl);
      });
}

/// The warp's queries and the lane's head dims.
void placeWarpRows(OpBuilder &b, Location loc, PrefillBody &k) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  // Warp w's queries are rows w·perWarp + i of the block; lane l's head
  // dims l + 32e (clamped where dk < 32e + 32: those lanes compute but never
  // store).
  auto plus = [&](Value x, int64_t v) { return v ? add(x, c(v)) : x; };
  int64_t dk = k.dk;
  Value row0 = arith::MulIOp::create(b, loc, k.warp, c(k.perWarp));
  for (int64_t i = 0; i < k.perWarp; ++i) {
    k.rowOf.push_back(plus(row0, i));
    k.query.push_back(add(k.q0, k.rowOf.back()));
  }
  for (int64_t e = 0; e < k.dims; ++e) {
    k.dimOf.push_back(plus(k.lane, e * kWarp));
    k.dimIdx.push_back(
        (e + 1) * kWarp <= dk
            ? k.dimOf.back()
            : arith::MinUIOp::create(b, loc, k.dimOf.back(), c(dk - 1))
                  .getResult());
  }
}

/// The tile of keys and values at `k0` in `ks` and `vs`, zero past keyCount.
void stageKeysValues(OpBuilder &b, Location loc, const PrefillBody &k,
                     Value k0) {
  const AttentionBuffers &in = k.in;
  Value cdk = k.cdk, zero = k.zero;
  scf::ForOp::create(
      b, loc, k.tid, index(b, loc, kKeys * k.dk), index(b, loc, k.threads),
      ValueRange{}, [&](OpBuilder &nb, Location nl, Value f, ValueRange) {
        Value jl = arith::DivUIOp::create(nb, nl, f, cdk);
        Value d = arith::RemUIOp::create(nb, nl, f, cdk);
        Value j = arith::AddIOp::create(nb, nl, k0, jl);
        auto stage = scf::IfOp::create(
            nb, nl, lessThan(nb, nl, j, k.keyCount),
            [&](OpBuilder &ib, Location il) {
              scf::YieldOp::create(
                  ib, il,
                  ValueRange{keyOrValue(ib, il, in.kPast, in.kNew, j, k.past,
                                        k.seq, k.kvh, d),
                             keyOrValue(ib, il, in.vPast, in.vNew, j, k.past,
                                        k.seq, k.kvh, d)});
            },
            [&](OpBuilder &ib, Location il) {
              scf::YieldOp::create(ib, il, ValueRange{zero, zero});
            });
        memref::StoreOp::create(nb, nl, stage.getResult(0), k.ks,
                                ValueRange{jl, d});
        memref::StoreOp::create(nb, nl, stage.getResult(1), k.vs,
                                ValueRange{jl, d});
        scf::YieldOp::create(nb, nl);
      });
}

/// The lane's key against each of the warp's queries.
scf::ForOp buildDots(OpBuilder &b, Location loc, const PrefillBody &k) {
  // Lane l's key k0 + l against the warp's queries: one pass over d.
  int64_t perWarp = k.perWarp;
  return scf::ForOp::create(
      b, loc, k.c0, k.cdk, index(b, loc, 1),
      SmallVector<Value>(perWarp, k.zero),
      [&](OpBuilder &nb, Location nl, Value d, ValueRange acc) {
        Value kd = memref::LoadOp::create(nb, nl, k.ks, ValueRange{k.lane, d});
        SmallVector<Value> next;
        for (int64_t i = 0; i < perWarp; ++i)
          next.push_back(math::FmaOp::create(
              nb, nl,
              memref::LoadOp::create(nb, nl, k.qs, ValueRange{k.rowOf[i], d}),
              kd, acc[i]));
        scf::YieldOp::create(nb, nl, next);
      });
}

/// The online softmax's step: max and sum in `next`, rescalings, `ps`.
void updateSoftmax(OpBuilder &b, Location loc, const PrefillBody &k,
                   ValueRange carried, scf::ForOp dots, Value j,
                   SmallVectorImpl<Value> &next,
                   SmallVectorImpl<Value> &alpha) {
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  int64_t perWarp = k.perWarp;
  Value zero = k.zero, minusInf = k.minusInf;
  for (int64_t i = 0; i < perWarp; ++i) {
    // Causal: key j is visible to query q0 + r at position past + q0 + r.
    Value visible = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, j,
                              add(k.past, k.query[i])),
        lessThan(b, loc, k.query[i], k.rowCount));
    Value s = arith::SelectOp::create(
        b, loc, visible,
        arith::MulFOp::create(b, loc, dots.getResult(i), k.scale), minusInf);
    Value m = carried[i];
    Value mNew = arith::MaximumFOp::create(b, loc, m, warpMax(b, loc, s));
    // A query past S sees nothing: its max stays -inf, and exp(-inf -
    // -inf) would be NaN, so it subtracts 0 instead (p and alpha are 0).
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                       minusInf);
    Value shift = arith::SelectOp::create(b, loc, none, zero, mNew);
    Value p =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, shift));
    alpha.push_back(
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, shift)));
    next[i] = mNew;
    next[perWarp + i] = math::FmaOp::create(b, loc, carried[perWarp + i],
                                            alpha[i], warpSum(b, loc, p));
    memref::StoreOp::create(b, loc, p, k.ps, ValueRange{k.rowOf[i], k.lane});
  }
}

/// The outputs rescaled by `alpha` plus the tile's P·V.
scf::ForOp accumulatePV(OpBuilder &b, Location loc, const PrefillBody &k,
                        ValueRange carried, ArrayRef<Value> alpha) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  int64_t perWarp = k.perWarp, dims = k.dims;
  SmallVector<Value> scaled;
  for (int64_t i = 0; i < perWarp; ++i)
    for (int64_t e = 0; e < dims; ++e)
      scaled.push_back(arith::MulFOp::create(
          b, loc, carried[2 * perWarp + i * dims + e], alpha[i]));
  return scf::ForOp::create(
      b, loc, k.c0, c(kKeys), c(1), scaled,
      [&](OpBuilder &nb, Location nl, Value jl, ValueRange acc) {
        SmallVector<Value> v, sums;
        for (int64_t e = 0; e < dims; ++e)
          v.push_back(memref::LoadOp::create(nb, nl, k.vs,
                                             ValueRange{jl, k.dimIdx[e]}));
        for (int64_t i = 0; i < perWarp; ++i) {
          Value p =
              memref::LoadOp::create(nb, nl, k.ps, ValueRange{k.rowOf[i], jl});
          for (int64_t e = 0; e < dims; ++e)
            sums.push_back(
                math::FmaOp::create(nb, nl, p, v[e], acc[i * dims + e]));
        }
        scf::YieldOp::create(nb, nl, sums);
      });
}

/// The tile loop's body: a tile of keys staged, scored and folded in.
void buildTileStep(OpBuilder &b, Location loc, const PrefillBody &k,
                   scf::ForOp tileLoop) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tileLoop.getBody());
  int64_t perWarp = k.perWarp;
  ValueRange carried = tileLoop.getRegionIterArgs();
  Value k0 = arith::MulIOp::create(b, loc, tileLoop.getInductionVar(),
                                   index(b, loc, kKeys));
  // The queries are staged (first tile), the last tile is read (later).
  gpu::BarrierOp::create(b, loc);
  stageKeysValues(b, loc, k, k0);
  gpu::BarrierOp::create(b, loc);

  scf::ForOp dots = buildDots(b, loc, k);
  Value j = arith::AddIOp::create(b, loc, k0, k.lane);
  SmallVector<Value> next(carried.begin(), carried.end()), alpha;
  updateSoftmax(b, loc, k, carried, dots, j, next, alpha);
  // The warp's probabilities are in shared memory.
  gpu::BarrierOp::create(b, loc);
  scf::ForOp pv = accumulatePV(b, loc, k, carried, alpha);
  for (int64_t e = 0; e < perWarp * k.dims; ++e)
    next[2 * perWarp + e] = pv.getResult(e);
  scf::YieldOp::create(b, loc, next);
}

/// out[seq, q, h, d] = output / sum, for the block's queries below S.
void storeOutputs(OpBuilder &b, Location loc, const PrefillBody &k,
                  scf::ForOp tileLoop) {
  int64_t perWarp = k.perWarp, dims = k.dims;
  for (int64_t i = 0; i < perWarp; ++i)
    for (int64_t e = 0; e < dims; ++e) {
      auto store = scf::IfOp::create(
          b, loc,
          arith::AndIOp::create(b, loc,
                                lessThan(b, loc, k.query[i], k.rowCount),
                                lessThan(b, loc, k.dimOf[e], k.cdk)));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      Value o = arith::DivFOp::create(
          b, loc, tileLoop.getResult(2 * perWarp + i * dims + e),
          tileLoop.getResult(perWarp + i));
      memref::StoreOp::create(b, loc, o, k.out,
                              ValueRange{k.seq, k.query[i], k.h, k.dimOf[e]});
    }
}

/// The kernel's body: queries `qBlock`·rows.. of head `h` of sequence
/// `seq` (`rowCount` S of them in all), lanes (`lane`, `warp`); `out` the
/// (B, S, H, dk) result.
void buildPrefillBody(OpBuilder &b, Location loc, const AttentionBuffers &in,
                      int64_t rows, Value rowCount, Value qBlock, Value h,
                      Value seq, Value lane, Value warp, Value qs, Value ks,
                      Value vs, Value ps, Value out) {
  const int64_t dk = in.headDim, perWarp = rows / kWarps;
  const int64_t dims = llvm::divideCeil(dk, kWarp); // head dims a lane
  const int64_t threads = kWarps * kWarp;
  PrefillBody k{in,  rows, dk,   perWarp, dims, threads, rowCount, h,
                seq, lane, warp, qs,      ks,   vs,      ps,       out};
  k.c0 = index(b, loc, 0);
  k.cdk = index(b, loc, dk);
  k.zero = f32Const(b, loc, 0.0);
  k.minusInf = minusInfinity(b, loc);
  placeBlock(b, loc, k, qBlock);
  k.scale = f32Const(b, loc, 1.0 / std::sqrt(double(dk)));
  stageQueries(b, loc, k);
  placeWarpRows(b, loc, k);

  // Carried: each query's max, sum, and output dims.
  SmallVector<Value> inits;
  inits.append(perWarp, k.minusInf);
  inits.append(perWarp, k.zero);
  inits.append(perWarp * dims, k.zero);
  auto tileLoop =
      scf::ForOp::create(b, loc, k.c0, k.tiles, index(b, loc, 1), inits);
  buildTileStep(b, loc, k, tileLoop);
  storeOutputs(b, loc, k, tileLoop);
}

/// `op` as its prologue and the kernel; its three results.
SmallVector<Value> flashAttention(OpBuilder &b, CachedAttentionOp op,
                                  int64_t rows) {
  Location loc = op.getLoc();
  CachedAttentionParts p = splitCachedAttention(b, op);
  Value batch = tensor::DimOp::create(b, loc, p.q, 0);
  Value rowCount = tensor::DimOp::create(b, loc, p.q, 1);
  AttentionBuffers in = attentionBuffers(b, loc, p);
  int64_t dk = in.headDim, dyn = ShapedType::kDynamic;
  Value out = memref::AllocOp::create(
      b, loc, MemRefType::get({dyn, dyn, in.heads, dk}, b.getF32Type()),
      ValueRange{batch, rowCount});
  {
    OpBuilder::InsertionGuard guard(b);
    SharedLayout layout = sharedLayout(rows, dk);
    gpu::LaunchOp launch = makeSharedLaunch(
        b, loc,
        {arith::CeilDivUIOp::create(b, loc, rowCount, index(b, loc, rows)),
         index(b, loc, in.heads), batch},
        {index(b, loc, kWarp), index(b, loc, kWarps), index(b, loc, 1)},
        4 * layout.floats);
    Value shared = dynamicSharedMemory(b, loc);
    buildPrefillBody(
        b, loc, in, rows, rowCount, launch.getBlockIds().x,
        launch.getBlockIds().y, launch.getBlockIds().z, launch.getThreadIds().x,
        launch.getThreadIds().y,
        sharedView(b, loc, shared, layout.qs, {rows, dk}),
        sharedView(b, loc, shared, layout.ks, {kKeys, layout.keyStride}),
        sharedView(b, loc, shared, layout.vs, {kKeys, dk}),
        sharedView(b, loc, shared, layout.ps, {rows, kKeys}), out);
  }
  return attentionResults(b, op, p, out);
}

struct TlmGpuPrefillAttention
    : public tlm::impl::TlmGpuPrefillAttentionBase<TlmGpuPrefillAttention> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-prefill-attention",
                                 {{"rows", rows, kWarps}})))
      return signalPassFailure();
    if (rows % kWarps != 0) {
      getOperation()->emitError()
          << "tlm-gpu-prefill-attention: rows must be a multiple of " << kWarps
          << " (a block's warps), got " << int64_t(rows);
      return signalPassFailure();
    }
    SmallVector<CachedAttentionOp> ops;
    getOperation()->walk([&](CachedAttentionOp op) {
      if (isF32Attention(op))
        ops.push_back(op);
      else
        LLVM_DEBUG(llvm::dbgs()
                   << "not f32, left to the conversion: " << op << "\n");
    });
    for (CachedAttentionOp op : ops)
      if (int64_t bytes = 4 * sharedLayout(rows, op.getHeadDim()).floats;
          bytes > kMaxSharedBytes) {
        op.emitError() << "tlm-gpu-prefill-attention: rows " << int64_t(rows)
                       << " and head dim " << op.getHeadDim() << " need "
                       << bytes << " bytes of shared memory a block, more than "
                       << kMaxSharedBytes;
        return signalPassFailure();
      }
    IRRewriter rewriter(&getContext());
    for (CachedAttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, flashAttention(rewriter, op, rows));
    }
  }
};

} // namespace
