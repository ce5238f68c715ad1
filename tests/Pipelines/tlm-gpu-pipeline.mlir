// The GPU pipeline on an embedding, RMSNorm and a projection: kernels
// outlined and launched with a real block/thread mapping, NVVM inside the
// kernels, and PTX for sm_90 in the binary.
//
// RUN: tlm-opt %s --tlm-gpu-pipeline=kernels-only | FileCheck %s --check-prefix=KERNELS
// RUN: tlm-opt %s --tlm-gpu-pipeline=kernels-only | \
// RUN:   tlm-opt --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM
// RUN: tlm-opt %s --tlm-gpu-pipeline=kernels-only | FileCheck %s --check-prefix=SINK
// RUN: %if libdevice %{ tlm-opt %s --tlm-gpu-pipeline | FileCheck %s --check-prefix=PTX %}
// RUN: %if libdevice && ptxas %{ tlm-opt %s --tlm-gpu-pipeline=format=fatbin | FileCheck %s --check-prefix=FATBIN %}
// RUN: %if libdevice %{ tlm-opt %s --tlm-gpu-pipeline=tensor-cores=tf32 | FileCheck %s --check-prefix=TF32 %}
// RUN: %if libdevice %{ tlm-opt %s --tlm-gpu-pipeline=tensor-cores=bf16 | FileCheck %s --check-prefix=BF16 %}
// RUN: %if libdevice %{ tlm-opt %s --tlm-gpu-pipeline | FileCheck %s --check-prefix=NOTF32 %}

// The host keeps only device allocations and launches: the gather (64
// threads along d), the norm's zero fill, its sum of squares (one block of
// 64 threads per row, combined with gpu.all_reduce, below 131072 rows;
// else one thread per row, the same loop mapped as any other: both are
// launched, the row count empties one grid), its rms per row and its
// scaling as one kernel (tlm-gpu-fuse-elementwise), the projection's zero
// fill (its output is the caller's buffer, so the projection kernels do
// not take the fill over), and the projection: for at most 4
// rows (decode) the GEMV kernel, one warp per column and 8 per block (4
// blocks for its 32 columns), else register-blocked tiles (16 x 16
// threads of 4 x 4 outputs: one 64-column block for its 32 columns) staged
// in workgroup memory. Both are launched; the row count gives the one not
// wanted an empty grid, which the runtime skips.
// KERNELS-LABEL: func.func @model
// KERNELS-NOT:     memref.alloc
// KERNELS-NOT:     scf.parallel
// KERNELS:         gpu.alloc
// KERNELS:         gpu.launch_func @model_kernel::@model_kernel blocks in (%{{.*}}, %c1, %c1) threads in (%c64, %c1, %c1)
// KERNELS:         gpu.launch_func @model_kernel_0::@model_kernel blocks in (%{{.*}}, %{{.*}}, %c1) threads in (%c128, %c1, %c1)
// KERNELS:         %[[ROWS:.*]] = arith.cmpi ult, %{{.*}}, %c131072
// KERNELS:         %[[BLOCKGRID:.*]] = arith.select %[[ROWS]], %{{.*}}, %c0
// KERNELS:         gpu.launch_func @model_kernel_1::@model_kernel blocks in (%[[BLOCKGRID]], %c1, %c1) threads in (%c64, %c1, %c1)
// KERNELS:         %[[THREADGRID:.*]] = arith.select %[[ROWS]], %c0, %{{.*}}
// KERNELS:         gpu.launch_func @model_kernel_2::@model_kernel blocks in (%[[THREADGRID]], %{{.*}}, %c1) threads in (%c128, %c1, %c1)
// KERNELS:         gpu.launch_func @model_kernel_3::@model_kernel blocks in (%{{.*}}, %c1, %c1) threads in (%c64, %c1, %c1)
// KERNELS:         gpu.launch_func @model_kernel_4::@model_kernel blocks in (%{{.*}}, %c1, %c1) threads in (%c32, %c1, %c1)
// KERNELS:         %[[FEW:.*]] = arith.cmpi ule, %{{.*}}, %c4
// KERNELS:         %[[GEMVGRID:.*]] = arith.select %[[FEW]], %c4, %c0
// KERNELS:         gpu.launch_func @model_kernel_5::@model_kernel blocks in (%[[GEMVGRID]], %c1, %c1) threads in (%c32, %c8, %c1)
// KERNELS:         %[[TILEGRID:.*]] = arith.select %[[FEW]], %c0, %{{.*}}
// KERNELS:         gpu.launch_func @model_kernel_6::@model_kernel blocks in (%[[TILEGRID]], %c1, %c1) threads in (%c16, %c16, %c1)
// KERNELS:         gpu.dealloc
// KERNELS:         return
// KERNELS:       gpu.module @model_kernel
// KERNELS:         gpu.func @model_kernel({{.*}}) kernel
// KERNELS:           gpu.block_id x
// KERNELS:           gpu.thread_id x
// KERNELS:           memref.load
// KERNELS:       gpu.module @model_kernel_1
// KERNELS:         gpu.all_reduce add
// KERNELS:       gpu.module @model_kernel_5
// KERNELS:         vector.load {{.*}} {alignment = 16 : i64} : memref<32x64xf32>, vector<4xf32>
// KERNELS:         math.fma {{.*}} : vector<4xf32>
// KERNELS:         gpu.shuffle  xor
// KERNELS:       gpu.module @model_kernel_6
// KERNELS:         gpu.func @model_kernel({{.*}}) workgroup({{.*}} : memref<64x16xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<64x17xf32, #gpu.address_space<workgroup>>) kernel
// KERNELS:           gpu.barrier
// KERNELS:           math.fma
// KERNELS:           gpu.barrier

// Constants are sunk into the kernels before outlining: no launch passes
// one of the f32 constants (the norm's epsilon, the fills' zeros) as a
// parameter, and the tile kernel gets its tile sizes as constants.
// SINK-LABEL: func.func @model
// SINK-NOT:     args({{[^)]*}}: f32
// SINK:       gpu.module @model_kernel_6
// SINK:         gpu.func @model_kernel(%{{[^:]*}}: memref<?x?x64xf32>, %{{[^:]*}}: index, %{{[^:]*}}: memref<32x64xf32>, %{{[^:]*}}: memref<?x?x32xf32>)

// NVVM:          gpu.module @model_kernel
// NVVM:            llvm.func @model_kernel({{.*}}) attributes {gpu.kernel, nvvm.kernel
// NVVM:              nvvm.read.ptx.sreg.ctaid.x
// NVVM:              nvvm.read.ptx.sreg.tid.x

// The host is LLVM; its launches stay gpu.launch_func on LLVM values until
// translation turns them into mgpu* calls.
// PTX:           llvm.func linkonce_odr @model(
// PTX-NOT:         gpu.alloc
// PTX:             llvm.call @mgpuMemAlloc
// PTX:             gpu.launch_func <%{{.*}} : !llvm.ptr> @model_kernel::@model_kernel
// PTX:           gpu.binary @model_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "{{.*}}.version 8.0{{.*}}.target sm_90{{.*}}.entry model_kernel
// The norm's square root is the correctly rounded one, not libdevice's
// default sqrt.approx; the block reduction is warp shuffles, the tiles
// synchronize with barriers.
// PTX:           shfl.sync.bfly
// PTX:           sqrt.rn.f32
// PTX:           ld.global.v4
// PTX:           bar.sync
// PTX-NOT:       sqrt.approx

// With tensor-cores=tf32 the projection's tiles are TF32 mma.sync (nvgpu's op,
// lowered by convert-nvgpu-to-nvvm) on values rounded by cvt.rna.tf32.f32;
// the GEMV beside them stays f32.
// TF32:          gpu.binary @model_kernel_{{[0-9]+}} {{.*}}cvt.rna.tf32.f32{{.*}}mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// With tensor-cores=bf16 they are BF16 mma.sync (NVVM's op) on values
// rounded to bf16 (cvt.rn.bf16.f32).
// BF16:          gpu.binary @model_kernel_{{[0-9]+}} {{.*(cvt.rn.bf16.f32.*mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32|mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.*cvt.rn.bf16.f32)}}
// NOTF32:        gpu.binary @model_kernel
// NOTF32-NOT:    mma.sync
// NOTF32-NOT:    tf32

// A fatbin starts with its magic number 0xBA55ED50 (little endian):
// FATBIN:        gpu.binary @model_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {ISAToBinaryTimeInMs = {{.*}}}, "P\EDU\BA

func.func @model(%ids: tensor<?x?xi64>, %table: tensor<100x64xf32>,
                 %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  %x = tlm.embedding %ids, %table : tensor<?x?xi64>, tensor<100x64xf32> -> tensor<?x?x64xf32>
  %n = tlm.rmsnorm %x, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %y = tlm.linear %n, %w : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}
