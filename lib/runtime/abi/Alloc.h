//===- Alloc.h - the compiled code's heap, with its failure reported -*- C++ -*-===//
//
// The CPU pipeline lowers memref.alloc/dealloc to these generic functions
// (finalize-memref-to-llvm{use-generic-functions}) instead of malloc/free,
// so a buffer the machine cannot give (a huge --batch's activations) is one
// `error:` line and exit 1 rather than a SIGSEGV on a null pointer. The JIT
// resolves them to this library's definitions; an artifact links them in
// from libtlm_abi.a like memrefCopy.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_ABI_ALLOC_H
#define TLM_RUNTIME_ABI_ALLOC_H

#include <cstdint>

extern "C" {
void *_mlir_memref_to_llvm_alloc(uint64_t size);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void *ptr);
}

#endif // TLM_RUNTIME_ABI_ALLOC_H
