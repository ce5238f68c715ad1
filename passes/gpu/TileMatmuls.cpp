//===- TileMatmuls.cpp - tlm-gpu-tile-matmuls -----------------------------===//
//
// Projections as GPU kernels: register-blocked tiles staged in workgroup
// memory (TiledKernel.cpp), and for decode's few rows a warp-per-column GEMV
// (GemvKernel.cpp): both launched, the row count giving one of them an
// empty grid at each call.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/gpu/GemvKernel.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/MmaKernel.h"
#include "passes/gpu/Passes.h"
#include "passes/gpu/TiledKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tlm-gpu-tile-matmuls"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUTILEMATMULS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// The zero fill of `out` that `op` starts from, if the kernels can do it
/// themselves by storing their sums (a launch less): `out` a fresh device
/// allocation in `op`'s block, filled with +0.0 there, and before `op` used
/// by nothing else but its dims. After `op` anything may read it (the
/// kernels write every element); nothing may pass it on (a view, a select,
/// a region's result, a call), since a read through that would not show
/// as a use.
linalg::FillOp foldableZeroFill(linalg::LinalgOp op, Value out) {
  auto alloc = out.getDefiningOp<gpu::AllocOp>();
  Block *block = op->getBlock();
  if (!alloc || alloc->getBlock() != block)
    return {};
  linalg::FillOp fill;
  for (Operation *user : out.getUsers()) {
    if (user == op.getOperation() || isa<memref::DimOp>(user))
      continue;
    auto passesOn = [](Operation *o) {
      return isa<ViewLikeOpInterface, RegionBranchOpInterface, CallOpInterface>(
                 o) ||
             o->hasTrait<OpTrait::IsTerminator>() ||
             llvm::any_of(o->getResultTypes(), llvm::IsaPred<MemRefType>);
    };
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at || passesOn(user))
      return {};
    auto candidate = dyn_cast<linalg::FillOp>(user);
    if (at->isBeforeInBlock(op)) {
      // The one use before op: the fill.
      if (!candidate || at != user || fill)
        return {};
      fill = candidate;
    }
  }
  if (!fill || !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
    return {};
  return fill;
}

/// A projection of the pass's work: the op, its dims, and the zero fill
/// its kernels can do themselves.
struct Work {
  Work(linalg::LinalgOp op, const tlm::ProjectionDims &dims)
      : op(op), rows(dims.rows.size()) {
    x = op.getDpsInputOperand(0)->get();
    w = op.getDpsInputOperand(1)->get();
    out = op.getDpsInitOperand(0)->get();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    n = ranges[dims.n];
    k = ranges[dims.k];
  }
  linalg::LinalgOp op;
  size_t rows; ///< x's leading dims
  Value x, w, out;
  int64_t n, k;
  linalg::FillOp fill;
};

/// Whether `op` uses `v`, in its operands or its regions'.
bool uses(Operation *op, Value v) {
  bool found = false;
  op->walk([&](Operation *o) {
    if (llvm::is_contained(o->getOperands(), v))
      found = true;
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

/// Whether moving a group's kernels past `o` is safe whatever `o` touches
/// besides the group's own buffers: it has no memory effects and no
/// regions, allocates, or fills a fresh allocation (which nothing the
/// group reads can alias).
bool movablePast(Operation *o) {
  if (isa<gpu::AllocOp>(o))
    return true;
  if (auto fill = dyn_cast<linalg::FillOp>(o))
    return fill.getOutputs()[0].getDefiningOp<gpu::AllocOp>() != nullptr;
  return o->getNumRegions() == 0 && isMemoryEffectFree(o);
}

/// `t` with dim `d` dynamic (the dim a group's buffers may differ in).
MemRefType withDynamicDim(MemRefType t, int64_t d) {
  SmallVector<int64_t> shape(t.getShape());
  shape[d] = ShapedType::kDynamic;
  return MemRefType::get(shape, t.getElementType());
}

/// Why `next` cannot join `group` in one GEMV launch, placed where the last
/// one is (empty when it can): the same x, one weight type, identity
/// layouts whose types differ only in w's rows and out's columns, the same
/// fill folding, distinct freshly allocated outputs that no member reads,
/// and between the group's last projection and `next` nothing that uses x
/// or a member's buffer, and nothing with other memory effects than
/// allocating and filling fresh buffers (the members' reads and writes move
/// to `next`'s place).
std::string cannotJoin(ArrayRef<Work> group, const Work &next) {
  const Work &last = group.back();
  if (next.op->getBlock() != last.op->getBlock())
    return "in another block";
  if (next.x != last.x)
    return "another x";
  auto type = [](Value v) { return cast<MemRefType>(v.getType()); };
  for (Value v : {next.w, next.out, last.w, last.out})
    if (!type(v).getLayout().isIdentity() || type(v).getMemorySpace())
      return "a strided buffer or one in another memory space";
  if (withDynamicDim(type(next.w), 0) != withDynamicDim(type(last.w), 0))
    return "weights of other types";
  int64_t lastDim = type(next.out).getRank() - 1;
  if (withDynamicDim(type(next.out), lastDim) !=
      withDynamicDim(type(last.out), lastDim))
    return "outputs of other types";
  if (bool(next.fill) != bool(last.fill))
    return "one fill folded, the other kept";
  // The launch writes every member's output at once while reading x and
  // every weight: the outputs must be distinct buffers that none of them
  // reads, which only fresh allocations are known to be.
  auto fresh = [&](Value out) {
    return out.getDefiningOp<gpu::AllocOp>() && out != next.x;
  };
  if (!fresh(next.out) || !fresh(last.out))
    return "an output that is no fresh allocation (it may alias)";
  for (const Work &member : group)
    if (member.out == next.out || member.out == next.w || member.w == next.out)
      return "a member's output is another's operand";
  Operation *end = linalg::LinalgOp(next.op);
  for (Operation *o = last.op->getNextNode(); o && o != end;
       o = o->getNextNode()) {
    if (uses(o, next.x))
      return "x used in between";
    for (const Work &member : group)
      if (uses(o, member.w) || uses(o, member.out))
        return "a member's weight or output used in between";
    if (!movablePast(o))
      return "an op with memory effects in between";
  }
  return "";
}

struct TlmGpuTileMatmuls
    : public tlm::impl::TlmGpuTileMatmulsBase<TlmGpuTileMatmuls> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-tile-matmuls",
                                 {{"tile", tile, 1},
                                  {"thread-tile", threadTile, 1},
                                  {"gemv-rows", gemvRows, 0},
                                  {"gemv-min-warps", gemvMinWarps, 1}})))
      return signalPassFailure();
    if (tensorCores != "none" && tensorCores != "tf32" &&
        tensorCores != "bf16") {
      getOperation()->emitError()
          << "tlm-gpu-tile-matmuls: tensor-cores must be none, tf32 or bf16, "
             "got '"
          << tensorCores << "'";
      return signalPassFailure();
    }
    SmallVector<Work> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      FailureOr<tlm::ProjectionDims> p = tlm::matchProjection(op);
      if (failed(p))
        return;
      Work item(op, *p);
      if (!projectionKernelsApply(item.x, item.w, item.out)) {
        // Left to the parallel loops, as every other op.
        LLVM_DEBUG(llvm::dbgs()
                   << "not f32 x and out, f32/bf16/f16 w: " << op << "\n");
        return;
      }
      item.fill = foldableZeroFill(op, item.out);
      work.push_back(item);
    });
    // Projections of one x in a row (Q, K, V; W1, W3) share a GEMV launch.
    SmallVector<SmallVector<Work>> groups;
    for (Work &item : work) {
      if (!groups.empty() && gemvRows > 0) {
        std::string why = cannotJoin(groups.back(), item);
        if (why.empty()) {
          groups.back().push_back(item);
          continue;
        }
        LLVM_DEBUG(llvm::dbgs()
                   << "own GEMV (" << why << "): " << item.op << "\n");
      }
      groups.push_back({item});
    }
    IRRewriter rewriter(&getContext());
    for (SmallVector<Work> &group : groups)
      rewrite(rewriter, group);
  }

  /// The group's kernels, where its last projection was: one GEMV for
  /// them all and tiles for each.
  void rewrite(IRRewriter &b, MutableArrayRef<Work> group) {
    Work &last = group.back();
    Location loc = last.op.getLoc();
    Value x = last.x;
    b.setInsertionPoint(last.op);
    // x is (rows..., k): its leading dims are the rows, flattened to m.
    SmallVector<Value> rowSizes;
    for (unsigned i = 0; i < last.rows; ++i)
      rowSizes.push_back(b.createOrFold<memref::DimOp>(loc, x, i));
    Value m = product(b, loc, rowSizes);
    SmallVector<GpuProjection> projs;
    for (Work &item : group) {
      projs.push_back(
          GpuProjection{x, item.w, item.out, rowSizes, m, item.n, item.k});
      if (item.fill) {
        projs.back().overwrite = true;
        b.eraseOp(item.fill);
      }
    }
    int64_t threads = tile * tile;
    Value few;
    // The GEMV's blocks have as many threads as the tiles', in whole warps.
    if (gemvRows > 0 && threads % 32 == 0 &&
        llvm::all_of(projs,
                     [](const GpuProjection &p) { return gemvApplies(p); })) {
      // Decode (m <= gemv-rows) runs the GEMV, anything longer the tiles:
      // both are launched, and the row count gives the other one an empty
      // grid, which the runtime does not launch (mgpuLaunchKernel). Under
      // an scf.if instead, gpu-async-region would make the host wait after
      // each; one kernel with both branches would give the GEMV the tiles'
      // registers, and with them a fraction of the occupancy
      // (docs/gpu.md#tlm-gpu-tile-matmuls).
      few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, m,
                                  index(b, loc, gemvRows));
      buildGemv(b, loc, projs, few);
    }
    for (const GpuProjection &proj : projs)
      buildTiles(b, loc, proj, few);
    for (Work &item : group)
      b.eraseOp(item.op);
  }

  /// One GEMV launch for `projs` (one x), on a grid that `few` empties for
  /// more rows than it takes.
  void buildGemv(IRRewriter &b, Location loc, ArrayRef<GpuProjection> projs,
                 Value few) {
    GpuProjection all = projs.front();
    SmallVector<GemvSegment> segments;
    if (projs.size() > 1) {
      // One buffer type for the weights (n dynamic) and one for the
      // outputs (their last dim dynamic), so a warp can select its own
      // (cannotJoin: they differ in nothing else).
      auto wType = [](Value v) {
        return withDynamicDim(cast<MemRefType>(v.getType()), 0);
      };
      auto outType = [](Value v) {
        auto t = cast<MemRefType>(v.getType());
        return withDynamicDim(t, t.getRank() - 1);
      };
      int64_t offset = 0;
      for (const GpuProjection &p : projs) {
        segments.push_back(
            {memref::CastOp::create(b, loc, wType(p.w), p.w),
             memref::CastOp::create(b, loc, outType(p.out), p.out), offset});
        offset += p.n;
      }
      all.w = segments.front().w;
      all.out = segments.front().out;
      all.n = offset;
    }
    int64_t threads = tile * tile;
    GemvShape gemv =
        gemvShape(b.getContext(), all, gemvRows, threads / 32, gemvMinWarps);
    Value c1 = index(b, loc, 1);
    Value gemvBlocks = arith::SelectOp::create(
        b, loc, few, index(b, loc, gemv.blocks), index(b, loc, 0));
    SmallVector<Type> partials;
    if (gemv.partials)
      partials.push_back(gemv.partials);
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch = makeLaunch(
        b, loc, {gemvBlocks, c1, c1},
        {index(b, loc, 32), index(b, loc, gemv.warps), c1}, partials);
    buildGemvBody(b, loc, all, gemv, gemvRows, launch.getBlockIds().x,
                  launch.getThreadIds().x, launch.getThreadIds().y,
                  gemv.partials ? Value(launch.getWorkgroupAttributions()[0])
                                : Value(),
                  segments);
  }

  /// `proj`'s tiles (on tensor cores with `tensor-cores`), their grid
  /// emptied by `few` (when a GEMV takes those rows) if set.
  void buildTiles(IRRewriter &b, Location loc, const GpuProjection &proj,
                  Value few) {
    // Rows beyond the GEMV's go to tensor-core tiles or to the FMA ones.
    bool cores = tensorCores != "none";
    bool mma = cores && mmaApplies(proj);
    LLVM_DEBUG(if (cores && !mma) llvm::dbgs()
               << "strided x or out, no tensor cores\n");
    MmaInputs inputs =
        tensorCores == "bf16" ? MmaInputs::Bf16 : MmaInputs::Tf32;
    Value c1 = index(b, loc, 1);
    if (mma) {
      MmaShape shape = mmaShape(b, loc, proj, inputs);
      Value x2 = collapseRows(b, loc, proj.x),
            out2 = collapseRows(b, loc, proj.out);
      gpu::LaunchOp launch = makeLaunch(b, loc,
                                        {emptyIf(b, loc, few, shape.rowBlocks),
                                         index(b, loc, shape.colBlocks), c1},
                                        {index(b, loc, kMmaThreads), c1, c1},
                                        {shape.xs, shape.ws});
      buildMmaBody(b, loc, proj, x2, out2, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getThreadIds().x,
                   launch.getWorkgroupAttributions()[0],
                   launch.getWorkgroupAttributions()[1], inputs);
      b.setInsertionPointAfter(launch);
      return;
    }
    TiledShape shape = tiledShape(b, loc, proj, tile, threadTile);
    Value ct = index(b, loc, tile);
    gpu::LaunchOp launch = makeLaunch(b, loc,
                                      {emptyIf(b, loc, few, shape.rowBlocks),
                                       index(b, loc, shape.colBlocks), c1},
                                      {ct, ct, c1}, {shape.xs, shape.ws});
    buildTiledBody(b, loc, proj, tile, threadTile, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getThreadIds().x,
                   launch.getThreadIds().y, launch.getWorkgroupAttributions()[0],
                   launch.getWorkgroupAttributions()[1]);
    b.setInsertionPointAfter(launch);
  }

  /// `blocks`, or none when `few` (a GEMV takes the rows) is set and true.
  static Value emptyIf(OpBuilder &b, Location loc, Value few, Value blocks) {
    if (!few)
      return blocks;
    return arith::SelectOp::create(b, loc, few, index(b, loc, 0), blocks);
  }
};

} // namespace
