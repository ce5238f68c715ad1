//===- Alloc.h - the compiled code's heap, counted and bounded -*- C++ -*-===//
//
// The CPU pipeline lowers memref.alloc/dealloc to these generic functions
// (finalize-memref-to-llvm{use-generic-functions}) instead of malloc/free,
// so a buffer the machine cannot give (a huge --batch's activations) is one
// `error:` line and exit 1 rather than a SIGSEGV on a null pointer. The JIT
// resolves them to this library's definitions; an artifact links them in
// from libtlm_abi.a like memrefCopy.
//
// Every block carries its size in front of it, so the live total and its
// high-water mark are known (the activations a run really takes, which the
// estimate before compiling is checked against), and a limit on the total
// can be set: Linux grants a malloc it cannot back and kills the process
// later, when the pages are touched, so the limit is what turns "more than
// the memory there is" into an error line rather than the OOM killer.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_ABI_ALLOC_H
#define TLM_RUNTIME_ABI_ALLOC_H

#include <cstdint>

extern "C" {
void *_mlir_memref_to_llvm_alloc(uint64_t size);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void *ptr);

/// Bytes the compiled code holds now, and the most it has held since the
/// last tlm_abi_heap_reset_peak().
uint64_t tlm_abi_heap_live(void);
uint64_t tlm_abi_heap_peak(void);
void tlm_abi_heap_reset_peak(void);
/// Refuse (error line, exit 1) an allocation that would take the live total
/// above `bytes`; 0 lifts the limit.
void tlm_abi_heap_set_limit(uint64_t bytes);
}

#endif // TLM_RUNTIME_ABI_ALLOC_H
