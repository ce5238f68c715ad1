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
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  Value c0 = c(0), cdk = c(dk);
  Value zero = f32Const(b, loc, 0.0), minusInf = minusInfinity(b, loc);
  Value tid = add(arith::MulIOp::create(b, loc, warp, c(kWarp)), lane);
  Value kvh = arith::DivUIOp::create(b, loc, h, c(in.group));
  Value past = sequencePast(b, loc, in, seq);
  Value q0 = arith::MulIOp::create(b, loc, qBlock, c(rows));
  Value here = arith::MinUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, rowCount, q0), c(rows));
  // Query past + i sees keys 0..past + i: the block's last one, keyCount.
  Value keyCount = add(past, add(q0, here));
  Value tiles = arith::CeilDivUIOp::create(b, loc, keyCount, c(kKeys));
  Value scale = f32Const(b, loc, 1.0 / std::sqrt(double(dk)));

  // The block's queries, zero past S.
  scf::ForOp::create(b, loc, tid, c(rows * dk), c(threads), ValueRange{},
                     [&](OpBuilder &nb, Location nl, Value f, ValueRange) {
                       Value r = arith::DivUIOp::create(nb, nl, f, cdk);
                       Value d = arith::RemUIOp::create(nb, nl, f, cdk);
                       Value qi = arith::AddIOp::create(nb, nl, q0, r);
                       Value v =
                           guardedLoad(nb, nl, lessThan(nb, nl, qi, rowCount),
                                       in.q, ValueRange{seq, qi, h, d}, zero);
                       memref::StoreOp::create(nb, nl, v, qs, ValueRange{r, d});
                       scf::YieldOp::create(nb, nl);
                     });

  // Warp w's queries are rows w·perWarp + i of the block; lane l's head
  // dims l + 32e (clamped where dk < 32e + 32: those lanes compute but never
  // store).
  auto plus = [&](Value x, int64_t v) { return v ? add(x, c(v)) : x; };
  SmallVector<Value> rowOf, query, dimOf, dimIdx;
  Value row0 = arith::MulIOp::create(b, loc, warp, c(perWarp));
  for (int64_t i = 0; i < perWarp; ++i) {
    rowOf.push_back(plus(row0, i));
    query.push_back(add(q0, rowOf.back()));
  }
  for (int64_t e = 0; e < dims; ++e) {
    dimOf.push_back(plus(lane, e * kWarp));
    dimIdx.push_back(
        (e + 1) * kWarp <= dk
            ? dimOf.back()
            : arith::MinUIOp::create(b, loc, dimOf.back(), c(dk - 1))
                  .getResult());
  }
  // Carried: each query's max, sum, and output dims.
  SmallVector<Value> inits;
  inits.append(perWarp, minusInf);
  inits.append(perWarp, zero);
  inits.append(perWarp * dims, zero);
  auto tileLoop = scf::ForOp::create(b, loc, c0, tiles, c(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tileLoop.getBody());
    ValueRange carried = tileLoop.getRegionIterArgs();
    Value k0 =
        arith::MulIOp::create(b, loc, tileLoop.getInductionVar(), c(kKeys));
    // The queries are staged (first tile), the last tile is read (later).
    gpu::BarrierOp::create(b, loc);
    scf::ForOp::create(
        b, loc, tid, c(kKeys * dk), c(threads), ValueRange{},
        [&](OpBuilder &nb, Location nl, Value f, ValueRange) {
          Value jl = arith::DivUIOp::create(nb, nl, f, cdk);
          Value d = arith::RemUIOp::create(nb, nl, f, cdk);
          Value j = arith::AddIOp::create(nb, nl, k0, jl);
          auto stage = scf::IfOp::create(
              nb, nl, lessThan(nb, nl, j, keyCount),
              [&](OpBuilder &ib, Location il) {
                scf::YieldOp::create(
                    ib, il,
                    ValueRange{keyOrValue(ib, il, in.kPast, in.kNew, j, past,
                                          seq, kvh, d),
                               keyOrValue(ib, il, in.vPast, in.vNew, j, past,
                                          seq, kvh, d)});
              },
              [&](OpBuilder &ib, Location il) {
                scf::YieldOp::create(ib, il, ValueRange{zero, zero});
              });
          memref::StoreOp::create(nb, nl, stage.getResult(0), ks,
                                  ValueRange{jl, d});
          memref::StoreOp::create(nb, nl, stage.getResult(1), vs,
                                  ValueRange{jl, d});
          scf::YieldOp::create(nb, nl);
        });
    gpu::BarrierOp::create(b, loc);

    // Lane l's key k0 + l against the warp's queries: one pass over d.
    auto dots = scf::ForOp::create(
        b, loc, c0, cdk, c(1), SmallVector<Value>(perWarp, zero),
        [&](OpBuilder &nb, Location nl, Value d, ValueRange acc) {
          Value kd = memref::LoadOp::create(nb, nl, ks, ValueRange{lane, d});
          SmallVector<Value> next;
          for (int64_t i = 0; i < perWarp; ++i)
            next.push_back(math::FmaOp::create(
                nb, nl,
                memref::LoadOp::create(nb, nl, qs, ValueRange{rowOf[i], d}), kd,
                acc[i]));
          scf::YieldOp::create(nb, nl, next);
        });
    Value j = add(k0, lane);
    SmallVector<Value> next(carried.begin(), carried.end()), alpha;
    for (int64_t i = 0; i < perWarp; ++i) {
      // Causal: key j is visible to query q0 + r at position past + q0 + r.
      Value visible = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, j,
                                add(past, query[i])),
          lessThan(b, loc, query[i], rowCount));
      Value s = arith::SelectOp::create(
          b, loc, visible,
          arith::MulFOp::create(b, loc, dots.getResult(i), scale), minusInf);
      Value m = carried[i];
      Value mNew = arith::MaximumFOp::create(b, loc, m, warpMax(b, loc, s));
      // A query past S sees nothing: its max stays -inf, and exp(-inf -
      // -inf) would be NaN, so it subtracts 0 instead (p and alpha are 0).
      Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         mNew, minusInf);
      Value shift = arith::SelectOp::create(b, loc, none, zero, mNew);
      Value p =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, shift));
      alpha.push_back(
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, shift)));
      next[i] = mNew;
      next[perWarp + i] = math::FmaOp::create(b, loc, carried[perWarp + i],
                                              alpha[i], warpSum(b, loc, p));
      memref::StoreOp::create(b, loc, p, ps, ValueRange{rowOf[i], lane});
    }
    // The warp's probabilities are in shared memory.
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> scaled;
    for (int64_t i = 0; i < perWarp; ++i)
      for (int64_t e = 0; e < dims; ++e)
        scaled.push_back(arith::MulFOp::create(
            b, loc, carried[2 * perWarp + i * dims + e], alpha[i]));
    auto pv = scf::ForOp::create(
        b, loc, c0, c(kKeys), c(1), scaled,
        [&](OpBuilder &nb, Location nl, Value jl, ValueRange acc) {
          SmallVector<Value> v, sums;
          for (int64_t e = 0; e < dims; ++e)
            v.push_back(
                memref::LoadOp::create(nb, nl, vs, ValueRange{jl, dimIdx[e]}));
          for (int64_t i = 0; i < perWarp; ++i) {
            Value p =
                memref::LoadOp::create(nb, nl, ps, ValueRange{rowOf[i], jl});
            for (int64_t e = 0; e < dims; ++e)
              sums.push_back(
                  math::FmaOp::create(nb, nl, p, v[e], acc[i * dims + e]));
          }
          scf::YieldOp::create(nb, nl, sums);
        });
    for (int64_t k = 0; k < perWarp * dims; ++k)
      next[2 * perWarp + k] = pv.getResult(k);
    scf::YieldOp::create(b, loc, next);
  }

  // out[seq, q, h, d] = output / sum, for the block's queries below S.
  for (int64_t i = 0; i < perWarp; ++i)
    for (int64_t e = 0; e < dims; ++e) {
      auto store = scf::IfOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, lessThan(b, loc, query[i], rowCount),
                                lessThan(b, loc, dimOf[e], cdk)));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      Value o = arith::DivFOp::create(
          b, loc, tileLoop.getResult(2 * perWarp + i * dims + e),
          tileLoop.getResult(perWarp + i));
      memref::StoreOp::create(b, loc, o, out,
                              ValueRange{seq, query[i], h, dimOf[e]});
    }
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
