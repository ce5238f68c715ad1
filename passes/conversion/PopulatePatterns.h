//===- PopulatePatterns.h - the tlm → linalg pattern families ---*- C++ -*-===//
//
// One populate function per op family, one file each; tlm-lower-to-linalg
// (TlmToLinalg.cpp) applies them all.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_POPULATEPATTERNS_H
#define TLM_PASSES_CONVERSION_POPULATEPATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {

/// tlm.linear, tlm.embedding, tlm.swiglu, tlm.silu_ffn and their gradients
/// (LinearLowering.cpp).
void populateLinearLoweringPatterns(RewritePatternSet &patterns);
/// tlm.rmsnorm, tlm.softmax, tlm.cross_entropy, the gradients of RMSNorm
/// and cross-entropy (NormLowering.cpp).
void populateNormLoweringPatterns(RewritePatternSet &patterns);
/// tlm.rope, tlm.sdpa, tlm.attention, tlm.cached_attention
/// (AttentionLowering.cpp); with `byHeads`, tlm.attention of a static
/// sequence as AttentionHeads.h's loop.
void populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                       bool byHeads);
/// tlm.attention_grad (AttentionGradLowering.cpp), `byHeads` likewise.
void populateAttentionGradLoweringPatterns(RewritePatternSet &patterns,
                                           bool byHeads);
/// tlm.global_norm, tlm.adamw (OptimizerLowering.cpp).
void populateOptimizerLoweringPatterns(RewritePatternSet &patterns);

} // namespace mlir::tlm

#endif // TLM_PASSES_CONVERSION_POPULATEPATTERNS_H
