//===- DecodeAttention.cpp - tlm-gpu-decode-attention ---------------------===//
//
// Decode's attention as flash-decoding: the cache split into pieces of
// `chunk` positions, one block per (piece, head, sequence) leaving a max, a
// sum of exponentials and a partial output, and a second kernel merging the
// pieces. Built on tensors, before the conversion (AttentionKernels.h).
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

#include <cmath>

#define DEBUG_TYPE "tlm-gpu-decode-attention"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUDECODEATTENTION
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// Warps of the first kernel: at least one thread a head dim.
int64_t pieceWarps(int64_t headDim, int64_t warps) {
  return std::max(warps, (headDim + kWarp - 1) / kWarp);
}

/// The first kernel's shared memory: `chunk` scores and the groups'
/// partial outputs.
int64_t sharedBytes(int64_t headDim, int64_t chunk, int64_t warps) {
  int64_t groups = pieceWarps(headDim, warps) * kWarp / headDim;
  return 4 * (chunk + groups * headDim);
}

/// A loop over [lb, ub) by `step` carrying one f32, its body given the
/// induction variable and the carried value.
Value reduceLoop(
    OpBuilder &b, Location loc, Value lb, Value ub, Value step, Value init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> body) {
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, ValueRange{init},
      [&](OpBuilder &nb, Location nl, Value iv, ValueRange carried) {
        scf::YieldOp::create(nb, nl, body(nb, nl, iv, carried[0]));
      });
  return loop.getResult(0);
}

/// What the steps of the first kernel's body share.
struct PieceBody {
  const AttentionBuffers &in;
  int64_t chunk, warps, dk, threads, groups;
  Value piece, h, seq, lane, warp;
  Value scores, parts, maxes, sums, outs;
  // Worked out by the steps:
  Value c0{}, c1{}, zero{};
  Value t{};     ///< the thread's index in the block
  Value kvh{};   ///< the kv head of h
  Value past{};  ///< the sequence's cached positions
  Value start{}; ///< the piece's first position
  Value n{};     ///< its positions
};

/// The thread's index, the kv head, and the piece's positions.
void placePiece(OpBuilder &b, Location loc, PieceBody &k) {
  k.t = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, k.warp, index(b, loc, kWarp)),
      k.lane);
  k.kvh = arith::DivUIOp::create(b, loc, k.h, index(b, loc, k.in.group));
  // lengths[b] at most T: never a read past the cache, and the first piece
  // always holds the new token, so the merge's max is finite.
  k.past = sequencePast(b, loc, k.in, k.seq);
  // This piece's positions: [start, start + n), n = clamp(count - start,
  // 0, chunk) with count = past + 1 (the new token).
  Value count = arith::AddIOp::create(b, loc, k.past, k.c1);
  k.start = arith::MulIOp::create(b, loc, k.piece, index(b, loc, k.chunk));
  k.n = arith::MinSIOp::create(
      b, loc,
      arith::MaxSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, count, k.start), k.c0),
      index(b, loc, k.chunk));
}

/// The piece's scores, q·k scaled, in `scores`.
void buildScores(OpBuilder &b, Location loc, const PieceBody &k) {
  // Scores: a warp a position, its lanes the head dim; q stays in
  // registers.
  const AttentionBuffers &in = k.in;
  Value lane = k.lane, zero = k.zero;
  SmallVector<Value> qv, dims, dimOk;
  for (int64_t i = 0; i * kWarp < k.dk; ++i) {
    Value d = arith::AddIOp::create(b, loc, lane, index(b, loc, i * kWarp));
    Value ok = lessThan(b, loc, d, index(b, loc, k.dk));
    dims.push_back(d);
    dimOk.push_back(ok);
    qv.push_back(
        guardedLoad(b, loc, ok, in.q, ValueRange{k.seq, k.c0, k.h, d}, zero));
  }
  Value scale = f32Const(b, loc, 1.0 / std::sqrt(double(k.dk)));
  scf::ForOp::create(
      b, loc, k.warp, k.n, index(b, loc, k.warps), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value jl, ValueRange) {
        Value j = arith::AddIOp::create(nb, nl, k.start, jl);
        Value dot = zero;
        for (size_t i = 0; i < qv.size(); ++i) {
          auto term = scf::IfOp::create(
              nb, nl, dimOk[i],
              [&](OpBuilder &ib, Location il) {
                Value key = keyOrValue(ib, il, in.kPast, in.kNew, j, k.past,
                                       k.seq, k.kvh, dims[i]);
                scf::YieldOp::create(
                    ib, il,
                    ValueRange{math::FmaOp::create(ib, il, qv[i], key, dot)});
              },
              [&](OpBuilder &ib, Location il) {
                scf::YieldOp::create(ib, il, ValueRange{dot});
              });
          dot = term.getResult(0);
        }
        dot = warpSum(nb, nl, dot);
        auto store = scf::IfOp::create(
            nb, nl,
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, lane,
                                  index(nb, nl, 0)));
        {
          OpBuilder::InsertionGuard g(nb);
          nb.setInsertionPointToStart(store.thenBlock());
          memref::StoreOp::create(nb, nl,
                                  arith::MulFOp::create(nb, nl, dot, scale),
                                  k.scores, ValueRange{jl});
        }
        scf::YieldOp::create(nb, nl);
      });
}

/// The piece's max (returned), then its probabilities in place of the scores.
Value buildProbabilities(OpBuilder &b, Location loc, const PieceBody &k) {
  Value scores = k.scores;
  Value m = reduceLoop(b, loc, k.c0, k.n, k.c1, minusInfinity(b, loc),
                       [&](OpBuilder &nb, Location nl, Value jl, Value acc) {
                         Value s = memref::LoadOp::create(nb, nl, scores,
                                                          ValueRange{jl});
                         return arith::MaximumFOp::create(nb, nl, acc, s);
                       });
  gpu::BarrierOp::create(b, loc);
  scf::ForOp::create(
      b, loc, k.t, k.n, index(b, loc, k.threads), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value jl, ValueRange) {
        Value s = memref::LoadOp::create(nb, nl, scores, ValueRange{jl});
        Value p =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, s, m));
        memref::StoreOp::create(nb, nl, p, scores, ValueRange{jl});
        scf::YieldOp::create(nb, nl);
      });
  return m;
}

/// The probabilities' sum, returned, and each group's P·V in `parts`.
Value buildPV(OpBuilder &b, Location loc, const PieceBody &k) {
  // Their sum (every thread, in the same order), and P·V: a thread a head
  // dim and every `groups`-th position.
  const AttentionBuffers &in = k.in;
  Value scores = k.scores, t = k.t;
  int64_t dk = k.dk, groups = k.groups;
  Value l = reduceLoop(b, loc, k.c0, k.n, k.c1, k.zero,
                       [&](OpBuilder &nb, Location nl, Value jl, Value acc) {
                         Value p = memref::LoadOp::create(nb, nl, scores,
                                                          ValueRange{jl});
                         return arith::AddFOp::create(nb, nl, acc, p);
                       });
  Value active = lessThan(b, loc, t, index(b, loc, groups * dk));
  Value g = arith::DivUIOp::create(b, loc, t, index(b, loc, dk));
  Value d = arith::RemUIOp::create(b, loc, t, index(b, loc, dk));
  auto pv = scf::IfOp::create(b, loc, active);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(pv.thenBlock());
  Value acc = reduceLoop(
      b, loc, g, k.n, index(b, loc, groups), k.zero,
      [&](OpBuilder &nb, Location nl, Value jl, Value acc) {
        Value p = memref::LoadOp::create(nb, nl, scores, ValueRange{jl});
        Value j = arith::AddIOp::create(nb, nl, k.start, jl);
        Value v =
            keyOrValue(nb, nl, in.vPast, in.vNew, j, k.past, k.seq, k.kvh, d);
        return math::FmaOp::create(nb, nl, p, v, acc);
      });
  memref::StoreOp::create(b, loc, acc, k.parts, ValueRange{g, d});
  return l;
}

/// The piece's output, max `m` and sum `l` written to its slots.
void storePiece(OpBuilder &b, Location loc, const PieceBody &k, Value m,
                Value l) {
  Value t = k.t;
  // The groups' sums added in order, and the piece's max and sum.
  {
    auto write =
        scf::IfOp::create(b, loc, lessThan(b, loc, t, index(b, loc, k.dk)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(write.thenBlock());
    Value o = k.zero;
    for (int64_t i = 0; i < k.groups; ++i)
      o = arith::AddFOp::create(
          b, loc, o,
          memref::LoadOp::create(b, loc, k.parts,
                                 ValueRange{index(b, loc, i), t}));
    memref::StoreOp::create(b, loc, o, k.outs,
                            ValueRange{k.seq, k.h, k.piece, t});
  }
  auto first = scf::IfOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, k.c0));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  memref::StoreOp::create(b, loc, m, k.maxes, ValueRange{k.seq, k.h, k.piece});
  memref::StoreOp::create(b, loc, l, k.sums, ValueRange{k.seq, k.h, k.piece});
}

/// The first kernel's body: piece `piece` of head `h` of sequence `seq`,
/// with `warps` warps of lanes (`lane`, `warp`).
void buildPieceBody(OpBuilder &b, Location loc, const AttentionBuffers &in,
                    int64_t chunk, int64_t warps, Value piece, Value h,
                    Value seq, Value lane, Value warp, Value scores,
                    Value parts, Value maxes, Value sums, Value outs) {
  int64_t dk = in.headDim, threads = warps * kWarp;
  PieceBody k{in,  chunk, warps, dk,     threads, threads / dk, piece, h,
              seq, lane,  warp,  scores, parts,   maxes,        sums,  outs};
  k.c0 = index(b, loc, 0);
  k.c1 = index(b, loc, 1);
  placePiece(b, loc, k);
  k.zero = f32Const(b, loc, 0.0);
  buildScores(b, loc, k);
  gpu::BarrierOp::create(b, loc);
  Value m = buildProbabilities(b, loc, k);
  gpu::BarrierOp::create(b, loc);
  Value l = buildPV(b, loc, k);
  gpu::BarrierOp::create(b, loc);
  storePiece(b, loc, k, m, l);
}

/// The second kernel's body: head dim `d` of head `h` of sequence `seq`,
/// the pieces merged (each rescaled to the largest max).
void buildMergeBody(OpBuilder &b, Location loc, Value pieces, Value h,
                    Value seq, Value d, Value maxes, Value sums, Value outs,
                    Value out) {
  Value c0 = index(b, loc, 0), c1 = index(b, loc, 1);
  Value m = reduceLoop(
      b, loc, c0, pieces, c1, minusInfinity(b, loc),
      [&](OpBuilder &nb, Location nl, Value s, Value acc) {
        Value ms = memref::LoadOp::create(nb, nl, maxes, ValueRange{seq, h, s});
        return arith::MaximumFOp::create(nb, nl, acc, ms);
      });
  Value zero = f32Const(b, loc, 0.0);
  auto loop = scf::ForOp::create(
      b, loc, c0, pieces, c1, ValueRange{zero, zero},
      [&](OpBuilder &nb, Location nl, Value s, ValueRange acc) {
        Value ms = memref::LoadOp::create(nb, nl, maxes, ValueRange{seq, h, s});
        // A piece past every sequence's end has max -inf: weight 0 (the
        // first piece always holds the new token, so m is finite).
        Value w =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, ms, m));
        Value ls = memref::LoadOp::create(nb, nl, sums, ValueRange{seq, h, s});
        Value os =
            memref::LoadOp::create(nb, nl, outs, ValueRange{seq, h, s, d});
        scf::YieldOp::create(
            nb, nl,
            ValueRange{math::FmaOp::create(nb, nl, ls, w, acc[0]),
                       math::FmaOp::create(nb, nl, os, w, acc[1])});
      });
  Value o = arith::DivFOp::create(b, loc, loop.getResult(1), loop.getResult(0));
  memref::StoreOp::create(b, loc, o, out, ValueRange{seq, c0, h, d});
}

/// Attention of one new query row per sequence, (B, 1, H, dk), by the two
/// kernels, into a buffer.
Value flashDecoding(OpBuilder &b, Location loc, const AttentionBuffers &in,
                    Value batch, int64_t chunk, int64_t warps) {
  int64_t dk = in.headDim, heads = in.heads;
  warps = pieceWarps(dk, warps);
  int64_t groups = warps * kWarp / dk;
  Value c1 = index(b, loc, 1);
  Value pieces = arith::CeilDivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, in.past, c1), index(b, loc, chunk));
  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  Value maxes =
      memref::AllocOp::create(b, loc, MemRefType::get({dyn, heads, dyn}, f32),
                              ValueRange{batch, pieces});
  Value sums =
      memref::AllocOp::create(b, loc, MemRefType::get({dyn, heads, dyn}, f32),
                              ValueRange{batch, pieces});
  Value outs = memref::AllocOp::create(
      b, loc, MemRefType::get({dyn, heads, dyn, dk}, f32),
      ValueRange{batch, pieces});
  auto outType = MemRefType::get({dyn, 1, heads, dk}, f32);
  Value out = memref::AllocOp::create(b, loc, outType, ValueRange{batch});
  {
    // The scores and the groups' partial outputs in dynamic shared memory.
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch =
        makeSharedLaunch(b, loc, {pieces, index(b, loc, heads), batch},
                         {index(b, loc, kWarp), index(b, loc, warps), c1},
                         sharedBytes(dk, chunk, warps));
    Value shared = dynamicSharedMemory(b, loc);
    auto view = [&](int64_t offsetFloats, ArrayRef<int64_t> shape) {
      return sharedView(b, loc, shared, offsetFloats, shape);
    };
    buildPieceBody(b, loc, in, chunk, warps, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getBlockIds().z,
                   launch.getThreadIds().x, launch.getThreadIds().y,
                   view(0, {chunk}), view(chunk, {groups, dk}), maxes, sums,
                   outs);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch = makeLaunch(b, loc, {index(b, loc, heads), batch, c1},
                                      {index(b, loc, dk), c1, c1});
    buildMergeBody(b, loc, pieces, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getThreadIds().x, maxes, sums,
                   outs, out);
  }
  return out;
}

/// The one-token form of `op`: its prologue, then the kernels; its three
/// results.
SmallVector<Value> oneTokenAttention(OpBuilder &b, CachedAttentionOp op,
                                     int64_t chunk, int64_t warps) {
  Location loc = op.getLoc();
  CachedAttentionParts p = splitCachedAttention(b, op);
  Value batch = tensor::DimOp::create(b, loc, p.q, 0);
  // The buffers are taken last, right before the kernels that read them.
  AttentionBuffers in = attentionBuffers(b, loc, p);
  return attentionResults(b, op, p,
                          flashDecoding(b, loc, in, batch, chunk, warps));
}

struct TlmGpuDecodeAttention
    : public tlm::impl::TlmGpuDecodeAttentionBase<TlmGpuDecodeAttention> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-decode-attention",
                                 {{"chunk", chunk, 1}, {"warps", warps, 1}})))
      return signalPassFailure();
    // A block has at most 1024 threads.
    if (warps > kMaxBlockThreads / kWarp) {
      getOperation()->emitError()
          << "tlm-gpu-decode-attention: warps must be <= "
          << kMaxBlockThreads / kWarp << ", got " << int64_t(warps);
      return signalPassFailure();
    }
    SmallVector<CachedAttentionOp> ops;
    getOperation()->walk([&](CachedAttentionOp op) {
      int64_t rows = op.getQ().getType().getDimSize(1);
      if (!isF32Attention(op))
        LLVM_DEBUG(llvm::dbgs()
                   << "not f32, left to the conversion: " << op << "\n");
      else if (rows != 1 && !ShapedType::isDynamic(rows))
        LLVM_DEBUG(llvm::dbgs()
                   << "more than one new row a sequence: " << op << "\n");
      else if (op.getHeadDim() > kMaxBlockThreads)
        LLVM_DEBUG(llvm::dbgs()
                   << "heads wider than a block's threads: " << op << "\n");
      else
        ops.push_back(op);
    });
    // The pieces' shared memory within what a kernel may ask for (227 KiB
    // on sm_90, past 48 KiB by the opt-in the runtime makes).
    for (CachedAttentionOp op : ops)
      if (int64_t bytes = sharedBytes(op.getHeadDim(), chunk, warps);
          bytes > kMaxSharedBytes) {
        op.emitError() << "tlm-gpu-decode-attention: chunk " << int64_t(chunk)
                       << " needs " << bytes
                       << " bytes of shared memory a block, more than "
                       << kMaxSharedBytes;
        return signalPassFailure();
      }
    IRRewriter rewriter(&getContext());
    for (CachedAttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      if (op.getQ().getType().getDimSize(1) == 1) {
        rewriter.replaceOp(op, oneTokenAttention(rewriter, op, chunk, warps));
        continue;
      }
      // Rows known at run time only: the kernels for one, the op (lowered
      // by the conversion) for more.
      Value rows = tensor::DimOp::create(rewriter, loc, op.getQ(), 1);
      Value one = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        rows, index(rewriter, loc, 1));
      auto ifOp = scf::IfOp::create(rewriter, loc, op->getResultTypes(), one,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(rewriter, loc,
                             oneTokenAttention(rewriter, op, chunk, warps));
        rewriter.setInsertionPointToStart(ifOp.elseBlock());
        Operation *general = rewriter.clone(*op);
        scf::YieldOp::create(rewriter, loc, general->getResults());
      }
      rewriter.replaceOp(op, ifOp.getResults());
    }
  }
};

} // namespace
