//===- TlmDialect.td - the tlm dialect ---------------------*- tablegen -*-===//
#ifndef TLM_DIALECT_TD
#define TLM_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tlm_Dialect : Dialect {
  let name = "tlm";
  let summary = "Transformer language model building blocks";
  let description = [{
    The `tlm` dialect holds the layers of a CS336-style TransformerLM as ops
    on ranked tensors: linear projections, embedding lookup, RMSNorm, RoPE,
    the SwiGLU / SiLU feed-forward networks and causal multi-head attention
    with grouped-query heads. Weights are SSA values (function arguments),
    never constants, so a compiled module depends on the model config only.

    The math of every op is fixed by `docs/spec/model.md`; passes in `passes/`
    lower the ops to linalg and on to LLVM or the GPU dialect.
  }];
  let cppNamespace = "::mlir::tlm";
}

// No operand or result of a tlm op has a static dimension of size zero: the
// lowering tiles, packs and normalizes over these sizes and assumes at least
// one element (an empty tensor crashed the CPU pipeline). Every op has it.
def Tlm_NonEmptyShapes : NativeOpTrait<"NonEmptyShapes"> {
  let cppNamespace = "::mlir::tlm";
}

class Tlm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tlm_Dialect, mnemonic, !listconcat(traits, [Tlm_NonEmptyShapes])>;

#endif // TLM_DIALECT_TD
