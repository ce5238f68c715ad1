//===- MmaKernel.cpp - prefill's projections on tensor cores --------------===//
//
// One block of 4 warps computes a 64 x 64 patch of out = x · wᵀ; warp
// (wm, wn) of the 2 x 2 computes rows 32·wm.. and columns 32·wn.. of it as
// 2 x 4 fragments of mma.sync (f32 sums): m16n8k8 on TF32, or m16n8k16 on
// BF16. k goes in steps of 32: the block stages 64 rows of x and of w, 32
// values of k each, in workgroup memory, rounded as they are staged (TF32:
// to nearest, ties away, cvt.rna; BF16: to nearest even), then each warp
// loads its fragments from there.
//
// The fragment layouts are PTX's (lane = 4·g + t). m16n8k8 .tf32:
//   A (16 x 8, row-major)  a0 (g, t)   a1 (g+8, t)   a2 (g, t+4)  a3 (g+8, t+4)
//   B (8 x 8, k x n)       b0 (t, g)   b1 (t+4, g)
//   C (16 x 8)             c0 (g, 2t)  c1 (g, 2t+1)  c2 (g+8, 2t)
//                          c3 (g+8, 2t+1)
// nvgpu.mma.sync holds them as vector<4x1xf32> (a0..a3), vector<2x1xf32>
// (b0, b1) and vector<2x2xf32> ([c0, c1], [c2, c3]). B's (k, n) is w's
// (n, k): both tiles are read the same way, row g, column t. m16n8k16
// .bf16 packs two neighbouring k in each 32-bit register: A (g, 2t..),
// (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..); B (2t.., g), (2t+8.., g); C as
// above.
//
//===----------------------------------------------------------------------===//

#include "passes/gpu/MmaKernel.h"
#include "passes/common/Builders.h"
#include "passes/gpu/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace mlir::tlm {

namespace {
// The mma shape (k: 8 TF32 or 16 BF16 values) and how a block is made of
// it.
constexpr int64_t kM = 16, kN = 8;
constexpr int64_t kFragRows = 2, kFragCols = 4; // fragments a warp
constexpr int64_t kWarpRows = 2, kWarpCols = 2; // warps a block
constexpr int64_t kWarpM = kFragRows * kM, kWarpN = kFragCols * kN; // 32, 32
constexpr int64_t kBlockM = kWarpRows * kWarpM, kBlockN = kWarpCols * kWarpN;
static_assert(kWarpRows * kWarpCols * kWarp == kMmaThreads);
// k staged at a time: one warp stages one row of 32 values (coalesced).
constexpr int64_t kStepK = kWarp;
// Padding of a staged row: at 36 floats a row, lane (g, t)'s fragment
// value at row g, column t falls on bank 4g + t, 32 distinct banks; at 40
// bf16 (20 banks) a row, lane (g, t)'s pair at row g, columns 2t, 2t + 1
// falls on bank 20g + t mod 32: again 32 distinct.
int64_t rowStride(MmaInputs inputs) {
  return inputs == MmaInputs::Tf32 ? kStepK + 4 : kStepK + 8;
}
int64_t mmaK(MmaInputs inputs) { return inputs == MmaInputs::Tf32 ? 8 : 16; }
// Rows each thread stages per step (of x, and again of w).
constexpr int64_t kStageRows = kBlockM * kStepK / kMmaThreads;
static_assert(kBlockM == kBlockN, "x and w tiles are staged alike");

bool identityLayout(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getLayout().isIdentity() && type.getRank() >= 2;
}

/// `v` rounded to TF32 (19 bits) and kept as the f32 with those bits.
Value roundToTf32(OpBuilder &b, Location loc, Value v) {
  Value bits = NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), v,
                                                  NVVM::FPRoundingMode::RNA);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// A vector of `type` with `values` in row-major order.
Value vectorOf(OpBuilder &b, Location loc, VectorType type,
               ArrayRef<Value> values) {
  Value v = arith::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
  int64_t cols = type.getShape()[1];
  for (auto [i, x] : llvm::enumerate(values))
    v = vector::InsertOp::create(
        b, loc, x, v, ArrayRef<int64_t>{int64_t(i) / cols, int64_t(i) % cols});
  return v;
}
void storeSums(OpBuilder &b, Location loc, const GpuProjection &p, Value out2,
               Value row0, Value col0, Value wm, Value wn, Value g, Value t,
               scf::ForOp kLoop) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value a, Value v) {
    return arith::AddIOp::create(b, loc, a, v).getResult();
  };
  Value cn = c(p.n);
  // c[h][j] of fragment (i, jj) is out's row 16i + g + 8h, column
  // 8jj + 2t + j of the warp's patch.
  Value outRow =
      add(row0, add(arith::MulIOp::create(b, loc, wm, c(kWarpM)), g));
  Value outCol = add(col0, add(arith::MulIOp::create(b, loc, wn, c(kWarpN)),
                               arith::MulIOp::create(b, loc, t, c(2))));
  for (int64_t i = 0; i < kFragRows; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = add(outRow, c(i * kM + 8 * h));
      Value rowOk = lessThan(b, loc, row, p.rows);
      for (int64_t jj = 0; jj < kFragCols; ++jj)
        for (int64_t j = 0; j < 2; ++j) {
          Value col = add(outCol, c(jj * kN + j));
          auto store = scf::IfOp::create(
              b, loc,
              arith::AndIOp::create(b, loc, rowOk, lessThan(b, loc, col, cn)));
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(store.thenBlock());
          Value sum = vector::ExtractOp::create(
              b, loc, kLoop.getResult(i * kFragCols + jj),
              ArrayRef<int64_t>{h, j});
          if (!p.overwrite)
            sum = arith::AddFOp::create(
                b, loc,
                memref::LoadOp::create(b, loc, out2, ValueRange{row, col}),
                sum);
          memref::StoreOp::create(b, loc, sum, out2, ValueRange{row, col});
        }
    }
}

/// One k step's products on BF16 tensor cores: mma.sync.m16n8k16 with
/// bf16 inputs (nvgpu's lowering takes no bf16, so NVVM's op directly).
/// Lane (g, t)'s registers hold pairs of neighbouring k, packed in an i32:
/// A: (g, 2t..), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..); B: w's row g,
/// columns 2t.. and 2t+8..; the sums as in the TF32 form.
void buildBf16Products(OpBuilder &b, Location loc, Value xs, Value ws,
                       Value xRow, Value wRow, Value t,
                       SmallVectorImpl<Value> &acc) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value a, Value v) {
    return arith::AddIOp::create(b, loc, a, v).getResult();
  };
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto pairType = VectorType::get({2}, b.getBF16Type());
  // Two bf16 at (row, col), col even: one aligned 4-byte load.
  auto pair = [&](Value tile, Value row, Value col) -> Value {
    Value v =
        vector::LoadOp::create(b, loc, pairType, tile, ValueRange{row, col});
    Value bits =
        vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), v);
    return vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0});
  };
  auto sumType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                  SmallVector<Type>(4, f32));
  Value t2 = arith::MulIOp::create(b, loc, t, c(2));
  for (int64_t kk = 0; kk < kStepK; kk += mmaK(MmaInputs::Bf16)) {
    Value col = add(t2, c(kk)), col8 = add(t2, c(kk + 8));
    SmallVector<SmallVector<Value>> aRegs, bRegs;
    for (int64_t i = 0; i < kFragRows; ++i) {
      Value r = add(xRow, c(i * kM)), r8 = add(xRow, c(i * kM + 8));
      aRegs.push_back({pair(xs, r, col), pair(xs, r8, col), pair(xs, r, col8),
                       pair(xs, r8, col8)});
    }
    for (int64_t j = 0; j < kFragCols; ++j) {
      Value r = add(wRow, c(j * kN));
      bRegs.push_back({pair(ws, r, col), pair(ws, r, col8)});
    }
    for (int64_t i = 0; i < kFragRows; ++i)
      for (int64_t j = 0; j < kFragCols; ++j) {
        Value &sum = acc[i * kFragCols + j];
        SmallVector<Value> cRegs;
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t q = 0; q < 2; ++q)
            cRegs.push_back(vector::ExtractOp::create(b, loc, sum,
                                                      ArrayRef<int64_t>{h, q}));
        Value d = NVVM::MmaOp::create(
            b, loc, sumType, aRegs[i], bRegs[j], cRegs,
            ArrayRef<int64_t>{kM, kN, mmaK(MmaInputs::Bf16)}, std::nullopt,
            std::nullopt,
            std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                          NVVM::MMATypes::bf16},
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                           NVVM::MMALayout::col});
        SmallVector<Value> parts;
        for (int64_t r = 0; r < 4; ++r)
          parts.push_back(LLVM::ExtractValueOp::create(b, loc, d, r));
        sum = vector::FromElementsOp::create(
            b, loc, cast<VectorType>(sum.getType()), parts);
      }
  }
}

/// One k step's products on TF32 tensor cores: nvgpu.mma.sync m16n8k8.
void buildTf32Products(OpBuilder &b, Location loc, Value xs, Value ws,
                       Value xRow, Value wRow, Value t,
                       SmallVectorImpl<Value> &acc) {
  const int64_t kK = mmaK(MmaInputs::Tf32);
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value a, Value v) {
    return arith::AddIOp::create(b, loc, a, v).getResult();
  };
  auto aType = VectorType::get({4, 1}, b.getF32Type());
  auto bType = VectorType::get({2, 1}, b.getF32Type());
  for (int64_t kk = 0; kk < kStepK; kk += kK) {
    Value col = add(t, c(kk)), col4 = add(t, c(kk + 4));
    SmallVector<Value> aFrags, bFrags;
    for (int64_t i = 0; i < kFragRows; ++i) {
      Value r = add(xRow, c(i * kM)), r8 = add(xRow, c(i * kM + 8));
      auto at = [&](Value rr, Value cc) {
        return memref::LoadOp::create(b, loc, xs, ValueRange{rr, cc})
            .getResult();
      };
      aFrags.push_back(vectorOf(
          b, loc, aType, {at(r, col), at(r8, col), at(r, col4), at(r8, col4)}));
    }
    for (int64_t j = 0; j < kFragCols; ++j) {
      Value r = add(wRow, c(j * kN));
      bFrags.push_back(
          vectorOf(b, loc, bType,
                   {memref::LoadOp::create(b, loc, ws, ValueRange{r, col}),
                    memref::LoadOp::create(b, loc, ws, ValueRange{r, col4})}));
    }
    for (int64_t i = 0; i < kFragRows; ++i)
      for (int64_t j = 0; j < kFragCols; ++j) {
        Value &sum = acc[i * kFragCols + j];
        sum = nvgpu::MmaSyncOp::create(b, loc, aFrags[i], bFrags[j], sum,
                                       ArrayRef<int64_t>{kM, kN, kK},
                                       /*tf32Enabled=*/true);
      }
  }
}

/// What the steps of the MMA kernel's body share.
struct MmaBody {
  const GpuProjection &p;
  Value x2, xs, ws;
  bool tf32;
  Type wElem;
  // Worked out by the steps:
  Value lane{}, warp{}, wm{}, wn{}, g{}, t{}, row0{}, col0{};
  Value cn{}, ck{}, zero{}, wZero{};
};

/// `v` as the tiles hold it: rounded to TF32, or to bf16 unless it is one.
Value stageValue(OpBuilder &b, Location loc, bool tf32, Value v) {
  // TF32: x is rounded as it is staged, w too when it is f32 (bf16 and f16
  // widen to values TF32 holds exactly). BF16: both are rounded to bf16
  // (to nearest even), except bf16 weights, staged as they are.
  Type bf16 = b.getBF16Type();
  if (tf32)
    return roundToTf32(b, loc, v);
  return v.getType() == bf16 ? v : arith::TruncFOp::create(b, loc, bf16, v);
}

/// The block's x and w tiles at `k0` staged in workgroup memory, rounded.
void stageMmaTiles(OpBuilder &b, Location loc, const MmaBody &m, Value k0) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value a, Value v) {
    return arith::AddIOp::create(b, loc, a, v).getResult();
  };
  const GpuProjection &p = m.p;
  // Warp w stages rows w, w + 4, ... of both tiles, lane l column l.
  Value kx = add(k0, m.lane);
  Value kOk = lessThan(b, loc, kx, m.ck);
  for (int64_t s = 0; s < kStageRows; ++s) {
    Value local = add(m.warp, c(kMmaThreads / kWarp * s));
    Value row = add(m.row0, local);
    Value xv = guardedLoad(
        b, loc,
        arith::AndIOp::create(b, loc, lessThan(b, loc, row, p.rows), kOk), m.x2,
        ValueRange{row, kx}, m.zero);
    memref::StoreOp::create(b, loc, stageValue(b, loc, m.tf32, xv), m.xs,
                            ValueRange{local, m.lane});
    Value col = add(m.col0, local);
    // bf16 and f16 weights widen to f32 as guardedLoad reads them, unless
    // staged as they are (bf16 into bf16 tiles).
    Value wv = guardedLoad(
        b, loc, arith::AndIOp::create(b, loc, lessThan(b, loc, col, m.cn), kOk),
        p.w, ValueRange{col, kx}, m.wZero);
    if (!m.tf32 || m.wElem.isF32())
      wv = stageValue(b, loc, m.tf32, wv);
    memref::StoreOp::create(b, loc, wv, m.ws, ValueRange{local, m.lane});
  }
}

/// The thread's lane, warp, place in the fragments and the block's corner.
void placeMmaThread(OpBuilder &b, Location loc, MmaBody &m, Value blockX,
                    Value blockY, Value thread) {
  auto c = [&](int64_t v) { return index(b, loc, v); };
  Value cWarp = c(kWarp);
  m.lane = arith::RemUIOp::create(b, loc, thread, cWarp);
  m.warp = arith::DivUIOp::create(b, loc, thread, cWarp);
  m.wm = arith::RemUIOp::create(b, loc, m.warp, c(kWarpRows));
  m.wn = arith::DivUIOp::create(b, loc, m.warp, c(kWarpRows));
  m.g = arith::DivUIOp::create(b, loc, m.lane, c(4));
  m.t = arith::RemUIOp::create(b, loc, m.lane, c(4));
  m.row0 = arith::MulIOp::create(b, loc, blockX, c(kBlockM));
  m.col0 = arith::MulIOp::create(b, loc, blockY, c(kBlockN));
}

} // namespace

bool mmaApplies(const GpuProjection &p) {
  return identityLayout(p.x) && identityLayout(p.out);
}

Value collapseRows(OpBuilder &b, Location loc, Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getRank() == 2)
    return v;
  SmallVector<ReassociationIndices> groups(2);
  for (int64_t i = 0; i + 1 < type.getRank(); ++i)
    groups[0].push_back(i);
  groups[1].push_back(type.getRank() - 1);
  return memref::CollapseShapeOp::create(b, loc, v, groups);
}

MmaShape mmaShape(OpBuilder &b, Location loc, const GpuProjection &p,
                  MmaInputs inputs) {
  MmaShape s;
  s.rowBlocks = blocksFor(b, loc, p.rows, kBlockM);
  s.colBlocks = llvm::divideCeil(p.n, kBlockN);
  MLIRContext *ctx = b.getContext();
  int64_t stride = rowStride(inputs);
  if (inputs == MmaInputs::Tf32) {
    s.xs = workgroupF32(ctx, {kBlockM, stride});
    s.ws = workgroupF32(ctx, {kBlockN, stride});
    return s;
  }
  auto bf16Tile = [&](int64_t rows) {
    return MemRefType::get(
        {rows, stride}, BFloat16Type::get(ctx), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  };
  s.xs = bf16Tile(kBlockM);
  s.ws = bf16Tile(kBlockN);
  return s;
}

void buildMmaBody(OpBuilder &b, Location loc, const GpuProjection &p, Value x2,
                  Value out2, Value blockX, Value blockY, Value thread,
                  Value xs, Value ws, MmaInputs inputs) {
  const bool tf32 = inputs == MmaInputs::Tf32;
  OpBuilder::InsertionGuard guard(b);
  auto c = [&](int64_t v) { return index(b, loc, v); };
  auto add = [&](Value a, Value v) {
    return arith::AddIOp::create(b, loc, a, v).getResult();
  };
  Type wElem = cast<MemRefType>(p.w.getType()).getElementType();
  MmaBody m{p, x2, xs, ws, tf32, wElem};
  placeMmaThread(b, loc, m, blockX, blockY, thread);
  m.cn = c(p.n);
  m.ck = c(p.k);
  m.zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Type bf16 = b.getBF16Type();
  // BF16 tiles take bf16 weights as they are: loaded with a bf16 zero.
  m.wZero = !tf32 && m.wElem.isBF16()
                ? arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16))
                : m.zero;

  auto accType = VectorType::get({2, 2}, b.getF32Type());
  Value accZero = arith::ConstantOp::create(
      b, loc, accType,
      DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  SmallVector<Value> inits(kFragRows * kFragCols, accZero);
  auto kLoop = scf::ForOp::create(b, loc, c(0), m.ck, c(kStepK), inits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(kLoop.getBody());
    stageMmaTiles(b, loc, m, kLoop.getInductionVar());
    gpu::BarrierOp::create(b, loc);

    Value xRow = add(arith::MulIOp::create(b, loc, m.wm, c(kWarpM)), m.g);
    Value wRow = add(arith::MulIOp::create(b, loc, m.wn, c(kWarpN)), m.g);
    SmallVector<Value> acc(kLoop.getRegionIterArgs());
    if (tf32)
      buildTf32Products(b, loc, xs, ws, xRow, wRow, m.t, acc);
    else
      buildBf16Products(b, loc, xs, ws, xRow, wRow, m.t, acc);
    // Nobody overwrites the tiles before every warp has read them.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  storeSums(b, loc, p, out2, m.row0, m.col0, m.wm, m.wn, m.g, m.t, kLoop);
}

} // namespace mlir::tlm
