//===- AttentionKernels.cpp - what the attention kernels share ------------===//

#include "passes/gpu/AttentionKernels.h"
#include "passes/common/Builders.h"
#include "passes/gpu/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace mlir::tlm {

namespace {
/// `t` read in place by a kernel: a buffer of any strides.
Value readBuffer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType(), layout),
      t, /*read_only=*/true);
}

Attribute workgroup(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

bool isF32(Value v) {
  return cast<ShapedType>(v.getType()).getElementType().isF32();
}
} // namespace

AttentionBuffers attentionBuffers(OpBuilder &b, Location loc,
                                  const CachedAttentionParts &p) {
  AttentionBuffers in;
  in.q = readBuffer(b, loc, p.q);
  in.kPast = readBuffer(b, loc, p.kPast);
  in.vPast = readBuffer(b, loc, p.vPast);
  in.kNew = readBuffer(b, loc, p.kRows);
  in.vNew = readBuffer(b, loc, p.vRows);
  in.lengths = p.lengths ? readBuffer(b, loc, p.lengths) : Value();
  in.past = p.past;
  in.heads = p.heads;
  in.group = p.group;
  in.headDim = p.headDim;
  return in;
}

bool isF32Attention(CachedAttentionOp op) {
  return isF32(op.getQ()) && isF32(op.getK()) && isF32(op.getV()) &&
         isF32(op.getKPast()) && isF32(op.getVPast());
}

Value sequencePast(OpBuilder &b, Location loc, const AttentionBuffers &in,
                   Value seq) {
  if (!in.lengths)
    return in.past;
  return arith::MinUIOp::create(
      b, loc,
      arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          memref::LoadOp::create(b, loc, in.lengths, ValueRange{seq})),
      in.past);
}

Value keyOrValue(OpBuilder &b, Location loc, Value cache, Value fresh, Value j,
                 Value past, Value seq, Value kvh, Value d) {
  auto ifOp = scf::IfOp::create(
      b, loc, lessThan(b, loc, j, past),
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(nb, nl,
                             ValueRange{memref::LoadOp::create(
                                 nb, nl, cache, ValueRange{j, seq, kvh, d})});
      },
      [&](OpBuilder &nb, Location nl) {
        Value row = arith::SubIOp::create(nb, nl, j, past);
        scf::YieldOp::create(nb, nl,
                             ValueRange{memref::LoadOp::create(
                                 nb, nl, fresh, ValueRange{row, seq, kvh, d})});
      });
  return ifOp.getResult(0);
}

Value f32Const(OpBuilder &b, Location loc, double v) {
  return floatConst(b, loc, b.getF32Type(), v);
}

Value minusInfinity(OpBuilder &b, Location loc) {
  return f32Const(b, loc, -std::numeric_limits<double>::infinity());
}

gpu::LaunchOp makeSharedLaunch(OpBuilder &b, Location loc,
                               std::array<Value, 3> grid,
                               std::array<Value, 3> block,
                               int64_t sharedBytes) {
  auto launch = gpu::LaunchOp::create(
      b, loc, grid[0], grid[1], grid[2], block[0], block[1], block[2],
      arith::ConstantIntOp::create(b, loc, sharedBytes, 32));
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

Value dynamicSharedMemory(OpBuilder &b, Location loc) {
  return gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup(b.getContext())));
}

Value sharedView(OpBuilder &b, Location loc, Value shared, int64_t offsetFloats,
                 ArrayRef<int64_t> shape) {
  return memref::ViewOp::create(b, loc, workgroupF32(b.getContext(), shape),
                                shared, index(b, loc, offsetFloats * 4),
                                ValueRange{});
}

SmallVector<Value> attentionResults(OpBuilder &b, CachedAttentionOp op,
                                    const CachedAttentionParts &p, Value out) {
  Location loc = op.getLoc();
  auto type = cast<MemRefType>(out.getType());
  Value o = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
      out, /*restrict=*/true, /*writable=*/true);
  return {castTo(b, loc, mergeHeads(b, loc, o), op.getResult().getType()),
          castTo(b, loc, p.kNew, op.getKNew().getType()),
          castTo(b, loc, p.vNew, op.getVNew().getType())};
}

} // namespace mlir::tlm
