//===- Options.h - tlm-run's command line -----------------------*- C++ -*-===//
#ifndef TLM_TOOLS_TLMRUN_OPTIONS_H
#define TLM_TOOLS_TLMRUN_OPTIONS_H

#include "tools/common/Commands.h"

#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"
#include "lib/compiler/LlvmError.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tlm::cli {

namespace cl = llvm::cl;

/// The names of the CPU pipeline's switches, or with `cuda` the GPU
/// pipeline's, comma-separated (passes/pipelines/CpuSwitches.def,
/// GpuSwitches.def).
std::string switchNames(bool cuda = false);
/// --disable's help, naming every switch.
inline const std::string &disableHelp() {
  static const std::string help =
      "comma-separated optimizations to switch off, to measure them (`tlm-run "
      "switches [--target cuda]` describes each): " +
      switchNames() + "; with --target cuda: " + switchNames(true);
  return help;
}

/// Every flag of every subcommand; main() rejects the ones a subcommand does
/// not take.
struct Options {
  cl::opt<std::string> config{"config", cl::desc("model config (JSON)"),
                              cl::value_desc("C.json")};
  cl::opt<std::string> weights{"weights",
                               cl::desc("weights (safetensors); default: "
                                        "seeded initialisation"),
                               cl::value_desc("W.safetensors")};
  cl::opt<std::string> tokens{"tokens", cl::desc("one sequence of token ids"),
                              cl::value_desc("\"1 2 3\"")};
  cl::opt<std::string> tokensFile{
      "tokens-file",
      cl::desc("token ids: safetensors with an integer 'tokens' (batch, "
               "seq); eval also takes a flat (seq) stream, or raw ids with "
               "--tokens-dtype"),
      cl::value_desc("T.safetensors")};
  cl::opt<std::string> output{"output",
                              cl::desc("write the F32 'logits' tensor here"),
                              cl::value_desc("logits.safetensors")};
  cl::opt<std::string> target{"target", cl::desc("cpu | cuda"),
                              cl::init("cpu")};
  cl::opt<std::string> seedText{
      "seed",
      cl::desc("seed of the seeded weights, and of sampling unless "
               "--sampling-seed"),
      cl::init("0")};
  cl::opt<std::string> init{"init", cl::desc("module | gpt2"),
                            cl::init("module")};
  cl::opt<std::string> weightsDtype{
      "weights-dtype",
      cl::desc("how the weight matrices are stored: f32, bf16, f16, q8_0 "
               "or q4_0 "
               "(default: the --weights file's, else the config's dtype)")};
  cl::opt<std::string> dtype{
      "dtype",
      cl::desc("quantize: the dtype to write, f32 | bf16 | f16 | q8_0 | q4_0")};
  cl::opt<std::string> promptTokens{"prompt-tokens",
                                    cl::desc("prompt as token ids")};
  cl::opt<std::string> prompt{"prompt", cl::desc("prompt text")};
  cl::opt<std::string> tokenizer{"tokenizer", cl::desc("tokenizer path")};
  cl::opt<std::string> maxNewTokensText{"max-new-tokens", cl::init("32"),
                                        cl::desc("tokens to generate")};
  cl::opt<std::string> temperatureText{"temperature", cl::init("0.0"),
                                       cl::desc("0 = greedy")};
  cl::opt<std::string> topKText{
      "top-k", cl::init("0"),
      cl::desc("sample among the K likeliest tokens only (0: all)")};
  cl::opt<std::string> minPText{
      "min-p", cl::init("0"),
      cl::desc("drop tokens less than P times as likely as the likeliest")};
  cl::opt<std::string> repeatPenaltyText{
      "repeat-penalty", cl::init("1"),
      cl::desc("divide the positive logits (multiply the negative) of the "
               "last --repeat-last-n tokens by this (1: off)")};
  cl::opt<std::string> repeatLastNText{
      "repeat-last-n", cl::init("64"),
      cl::desc("tokens the penalties look back over, the prompt included")};
  cl::opt<std::string> frequencyPenaltyText{
      "frequency-penalty", cl::init("0"),
      cl::desc("subtract this times a recent token's count from its logit")};
  cl::opt<std::string> presencePenaltyText{
      "presence-penalty", cl::init("0"),
      cl::desc("subtract this from the logit of every recent token")};
  cl::opt<std::string> samplingSeedText{
      "sampling-seed",
      cl::desc("seed of sampling alone (default: --seed), so the sampled "
               "text changes without the seeded weights")};
  cl::opt<std::string> promptFile{"prompt-file",
                                  cl::desc("prompt text read from a file")};
  cl::opt<std::string> promptsFile{
      "prompts-file",
      cl::desc("generate: one prompt per line (text, or ids without "
               "--tokenizer), all decoded together as one batch")};
  cl::list<std::string> stops{
      "stop", cl::desc("generate: stop where the text contains this "
                       "(several allowed; not printed)")};
  cl::opt<std::string> stopTokensText{
      "stop-tokens", cl::desc("generate: ids that end the text, unprinted")};
  cl::opt<bool> interactive{
      "interactive", cl::desc("generate: then each line of stdin continues "
                              "the same KV cache, until end of file")};
  cl::opt<bool> quiet{"quiet",
                      cl::desc("generate: no summary or notes on stderr")};
  cl::opt<bool> special{
      "special", cl::desc("generate, tokenize: the tokenizer's added tokens "
                          "(<|endoftext|>, <s>) in the text are single ids "
                          "(tokenizer.json only)")};
  cl::opt<bool> echo{"echo", cl::desc("generate: print the prompt (its "
                                      "text, or its ids) before the "
                                      "continuation")};
  cl::opt<bool> incremental{
      "incremental",
      cl::desc("forward: each position's logits from a one-token step over "
               "the KV cache (the decode code) instead of one prefill")};
  cl::opt<bool> ignoreEos{
      "ignore-eos", cl::desc("go on past the tokenizer's end-of-text token")};
  cl::opt<std::string> topPText{"top-p", cl::init("1.0"),
                                cl::desc("nucleus mass")};
  cl::opt<std::string> promptLenText{
      "prompt-len",
      cl::desc("bench: prompt tokens (default 128, or what the context "
               "leaves after --gen)")};
  cl::opt<std::string> genText{
      "gen", cl::desc("bench: decode steps (default 32, at most a quarter "
                      "of the context)")};
  cl::opt<std::string> contextText{
      "context", cl::init("0"),
      cl::desc("eval: window length over a flat token stream (default: "
               "context_length)")};
  cl::opt<std::string> strideText{
      "stride", cl::init("0"),
      cl::desc("eval: tokens between window starts (default: --context)")};
  cl::opt<std::string> maxTokensText{
      "max-tokens", cl::init("0"),
      cl::desc("eval: the stream's first N tokens only (0: all)")};
  cl::opt<std::string> tokensDtype{
      "tokens-dtype",
      cl::desc("eval: --tokens-file is raw little-endian uint16, int32 or "
               "int64 ids (default: safetensors)")};
  cl::opt<std::string> repeatText{
      "repeat", cl::init("1"),
      cl::desc("bench: runs of prefill and decode (medians and spread)")};
  cl::opt<std::string> batchText{
      "batch", cl::init("1"),
      cl::desc("bench: batch size; generate: sequences sampled from the one "
               "prompt together, each from its own seed")};
  cl::opt<bool> json{"json", cl::desc("one JSON object on the last line")};
  cl::opt<std::string> optLevel{
      "opt-level", cl::init("auto"),
      cl::desc("LLVM optimisation of the JIT: 0-3, or auto (3, but 0 for "
               "models under 1M parameters, whose compile time would "
               "dominate their run time)")};
  cl::opt<std::string> llvmLoops{
      "llvm-loops", cl::init("auto"),
      cl::desc("LLVM's default pipeline with its loop unroller and "
               "vectorizers on the JIT's code (off: a cleanup pipeline "
               "only): on, off, or auto (off: tlm's passes have vectorized "
               "and unrolled the loops already)")};
  cl::opt<std::string> cpu{
      "cpu", cl::init(""),
      cl::desc("compile: code for this LLVM CPU (x86-64-v3, znver3, "
               "sapphirerapids, ...) and its instruction sets instead of "
               "the host's; the artifact then runs where that CPU's "
               "features are")};
  cl::opt<std::string> lanes{
      "lanes", cl::init("auto"),
      cl::desc("f32 lanes the CPU code's vectors and register blocks are "
               "sized for: 16 (AVX-512), 8 (AVX2), 4 (SSE/NEON), or auto "
               "(the host's widest)")};
  cl::opt<std::string> gemvColumns{
      "gemv-columns", cl::init("auto"),
      cl::desc("output columns per block of decode's GEMV: 1 (W's rows read "
               "one after another, one sequential stream), 2, 4, 8 (8 rows "
               "share each load of x), 16, or auto (1 when the weights are "
               "larger than the last-level cache, else 8)")};
  cl::opt<std::string> weightsLoad{
      "weights-load", cl::init("read"),
      cl::desc("read: one copy in aligned memory (default); mmap: use the "
               "file's pages in place")};
  cl::opt<std::string> hugePages{
      "huge-pages", cl::init("on"),
      cl::desc("on: the weights (read or initialised) and the KV cache ask "
               "the kernel for huge pages (default); off: ordinary pages")};
  cl::opt<std::string> cudaGraphs{
      "cuda-graphs", cl::init("off"),
      cl::desc("--target cuda: on records each decode step and launches it "
               "as one CUDA graph; off launches its kernels one by one "
               "(default)")};
  cl::opt<std::string> tensorCores{
      "tensor-cores", cl::init("off"),
      cl::desc("--target cuda: tf32 or bf16 runs prefill's projections on "
               "tensor cores (inputs rounded to 10- or 7-bit mantissas, sums "
               "f32); off keeps them f32 (default)")};
  cl::opt<std::string> disable{"disable", cl::init(""),
                               cl::desc(disableHelp().c_str())};
  cl::opt<std::string> artifact{
      "artifact",
      cl::desc("run this compiled model (tlm-run compile) instead of "
               "compiling; --config is then optional"),
      cl::value_desc("model.so")};
  cl::opt<std::string> cacheDir{
      "cache-dir",
      cl::desc("compiled code kept between runs here (default: "
               "$XDG_CACHE_HOME/tlm or ~/.cache/tlm)"),
      cl::value_desc("DIR")};
  cl::opt<bool> noCache{"no-cache",
                        cl::desc("compile afresh, without the cache")};
  cl::opt<std::string> stage{"stage", cl::desc("emit: tlm | linalg | llvm"),
                             cl::init("tlm")};
  cl::opt<std::string> atolText{"atol", cl::init("1e-5"),
                                cl::desc("compare: abs tol")};
  cl::opt<std::string> rtolText{"rtol", cl::init("1e-5"),
                                cl::desc("compare: rel tol")};
  cl::opt<std::string> text{"text", cl::desc("tokenize: the text")};
  cl::opt<std::string> textFile{"text-file", cl::desc("tokenize: a file")};
  cl::opt<bool> bos{"bos", cl::desc("tokenize: start with BOS")};
  cl::opt<std::string> ids{"ids", cl::desc("detokenize: token ids")};
  cl::list<std::string> positional{cl::Positional, cl::desc("<args>")};
  // Numbers are read as text and converted by resolve(), so a bad value
  // gets one clear `error:` line (llvm::cl would print its own).
  double atol = 1e-5, rtol = 1e-5;

  /// --threads N: parsed by main() itself, because libLLVM already registers
  /// a global `threads` option of its own. Default: every core this process
  /// may run on.
  int threads = 1;
  bool threadsGiven = false;
  /// The cores this process may run on (its CPU affinity).
  int cores = 1;
  /// Resident memory when main() started: the tool's own code and data.
  double startRssMb = 0;

  /// Copies the parsed flags into flags() and converts the numbers.
  Error resolve();
  /// The model commands' flags (tools/common/Flags.h), after resolve().
  const Flags &flags() const { return flags_; }

private:
  Flags flags_;
};

/// A mistake in the flags: exit code 1 (docs/spec/config.md#command-line).
inline Error flagError(const llvm::Twine &message) {
  return Error::withExitCode(1, message.str());
}

// Shared by the commands (Commands.cpp).
Expected<model::Config> loadConfig(const Options &o);
/// --threads within [1, the documented maximum].
Error checkThreads(const Options &o);
/// The JIT's options from the compile flags (JitFlags.cpp), some of whose
/// `auto` values depend on the model's size.
Expected<runtime::JitOptions> jitOptions(const Options &o,
                                               const model::Config &c);
/// The sessions of the model commands: compiled per the flags (or from the
/// compile cache), or loaded from --artifact; errors carry tlm-run's exit
/// codes.
SessionMaker jitSessions(const Options &o);
Expected<model::Weights> loadWeights(const Options &o,
                                           const model::Config &c);

// The subcommands other than forward, generate, eval and bench
// (tools/common): emit in Commands.cpp, the rest in UtilityCommands.cpp.
Error runEmit(const Options &o);
Error runCompare(const Options &o);
Error runImportLlama2c(const Options &o);
Error runImportHf(const Options &o);
Error runTokenize(const Options &o);
Error runInit(const Options &o);
Error runQuantize(const Options &o);
Error runDetokenize(const Options &o);
/// Lists the switches of --disable, one per line: name, tab, help.
Error runSwitches(const Options &o);
/// Writes an ahead-of-time artifact (a shared library) for --config.
Error runCompile(const Options &o);

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_OPTIONS_H
