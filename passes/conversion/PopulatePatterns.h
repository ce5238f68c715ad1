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
/// How attention of a static sequence lowers: with `byHeads`, as
/// AttentionHeads.h's loop over heads, in blocks of up to `block` queries
/// and keys (0: one (T, T) tile a head); else one (B, H, T, T) tensor.
struct AttentionForm {
  bool byHeads = false;
  int64_t block = 0;
};

/// tlm.rope, tlm.sdpa, tlm.attention, tlm.attention_lse,
/// tlm.cached_attention (AttentionLowering.cpp).
void populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                       AttentionForm form);
/// tlm.attention_grad (AttentionGradLowering.cpp).
void populateAttentionGradLoweringPatterns(RewritePatternSet &patterns,
                                           AttentionForm form);
/// tlm.global_norm, tlm.adamw (OptimizerLowering.cpp).
void populateOptimizerLoweringPatterns(RewritePatternSet &patterns);

} // namespace mlir::tlm

#endif // TLM_PASSES_CONVERSION_POPULATEPATTERNS_H
