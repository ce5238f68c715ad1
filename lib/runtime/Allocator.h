//===- Allocator.h - the process's heap policy for decoding ----*- C++ -*-===//
//
// A process-wide setting, so the library does not make it behind a caller's
// back: tlm-run calls it first thing, and an application that embeds
// Session and decodes many steps should too.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_ALLOCATOR_H
#define TLM_RUNTIME_ALLOCATOR_H

namespace tlm::runtime {

/// Keeps freed memory in the heap instead of returning it to the OS. Each
/// step allocates its temporaries afresh and frees them at the end; with
/// glibc's defaults those of 128 KiB and more (the logits row, the FFN
/// activations) are mapped and unmapped every time and page-faulted in again
/// on the next step, which made decode markedly slower
/// (docs/performance.md#the-heap-policy). Sets glibc's largest mmap threshold
/// (32 MiB) and no trimming; does nothing with another C library.
void keepFreedMemory();

} // namespace tlm::runtime

#endif // TLM_RUNTIME_ALLOCATOR_H
