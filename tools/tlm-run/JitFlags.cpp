//===- JitFlags.cpp - the model commands' compile flags -------------------===//
//
// --opt-level, --llvm-loops, --lanes, --gemv-columns, --disable and the MLIR
// pass manager's own flags, read into the JIT's options; each bad value is a
// user error.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"
#include "tools/common/Progress.h"

#include "lib/model/Config.h"
#include "lib/compiler/CompileCache.h"
#include "lib/compiler/HostTarget.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "passes/pipelines/CpuSwitches.h"
#include "passes/cpu/Strategy.h"
#include "passes/pipelines/GpuSwitches.h"

#include <string>

namespace tlm::cli {

namespace {
/// The switch table of the CPU or the GPU pipeline, as its infos.
template <typename Info> std::string namesOf(llvm::ArrayRef<Info> table) {
  std::string names;
  for (const Info &s : table)
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

template <typename Info> void list(llvm::ArrayRef<Info> table) {
  for (const Info &s : table)
    llvm::outs() << s.name << "\t" << s.help << "\n";
}

/// `disable`'s names switched off in `switches` by `table`; an unknown one
/// is an error naming the target's switches.
template <typename Info, typename Switches>
Error applyDisable(llvm::StringRef disable, llvm::ArrayRef<Info> table,
                         Switches &switches, llvm::StringRef target) {
  llvm::SmallVector<llvm::StringRef> disabled;
  disable.split(disabled, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef d : disabled) {
    d = d.trim();
    const auto *it =
        llvm::find_if(table, [&](const Info &s) { return s.name == d; });
    if (it == table.end())
      return flagError("--disable: unknown optimization '" + d.str() + "'" +
                       target.str() + " (known: " + namesOf(table) + ")");
    switches.*(it->field) = false;
  }
  return Error::success();
}
} // namespace

std::string switchNames(bool cuda) {
  return cuda ? namesOf(mlir::tlm::gpuSwitches())
              : namesOf(mlir::tlm::cpuSwitches());
}

Error runSwitches(const Options &o) {
  if (o.target == "cuda")
    list(mlir::tlm::gpuSwitches());
  else if (o.target == "cpu")
    list(mlir::tlm::cpuSwitches());
  else
    return flagError("--target must be cpu or cuda, found '" + o.target + "'");
  return Error::success();
}

/// --compute checked against the weights, the target and the flags that
/// rule the packed tiles out (`j` holds the lanes and switches parsed).
static Error checkCompute(const Options &o, const model::Config &c,
                          const runtime::JitOptions &j) {
  if (o.compute != "f32" && o.compute != "bf16" && o.compute != "int8")
    return flagError("--compute must be f32, bf16 or int8, found '" +
                     o.compute + "'");
  if (o.compute == "int8" && c.dtype != model::WeightDtype::Q8_0 &&
      c.dtype != model::WeightDtype::Q4_0)
    return flagError("--compute int8 takes q8_0 or q4_0 weights, and these "
                     "matrices are " +
                     std::string(model::dtypeName(c.dtype)) +
                     " (tlm-run quantize --dtype q8_0 converts them)");
  if (o.compute != "f32" && o.target == "cuda")
    return flagError("--compute " + o.compute +
                     " is the CPU's; --target cuda has --tensor-cores");
  // bf16 and int8 compute live in the packed tiles (and int8's in the GEMV
  // too), on 16-lane vectors: flags that rule those out would leave them
  // silently f32.
  std::string instruction = j.compute == "int8" ? "AVX512-VNNI's vpdpbusd"
                                                : "AVX-512's vdpbf16ps";
  if (j.compute != "f32" && (j.lanes == 8 || j.lanes == 4))
    return flagError("--compute " + j.compute +
                     " multiplies 16-lane vectors (" + instruction +
                     "): --lanes " + o.lanes + " rules it out");
  if (j.compute != "f32" &&
      !(j.switches.tileMatmuls && j.switches.packProjections))
    return flagError("--compute " + j.compute +
                     " runs in the packed projection tiles, which --disable " +
                     std::string(j.switches.tileMatmuls ? "pack-projections"
                                                        : "tile-matmuls") +
                     " switches off");
  return Error::success();
}

void chooseThreads(const std::string &command, Options &o) {
  // The commands whose step is decode's, one token a sequence; a whole
  // prompt or training batch is work enough for every core, and so may be
  // --prompts-file's batch, whose size is not known yet.
  bool decodes = (command == "generate" && o.promptsFile.empty()) ||
                 command == "compile" || (command == "bench" && !o.train);
  if (!decodes || o.threadsGiven || !o.artifact.empty() || o.target != "cpu")
    return;
  auto config = loadConfig(o);
  if (!config)
    return; // the command says what is wrong
  // A decode step multiplies every weight matrix once per sequence; the
  // embedding table is only read a row (unless it is the output too).
  uint64_t work = uint64_t(model::parameterCount(*config));
  if (!config->tieEmbeddings)
    work -= uint64_t(config->vocabSize * config->dModel);
  work *= uint64_t(std::max(1, o.batch));
  o.threads = int(mlir::tlm::defaultThreads(work, o.cores));
  if (o.threads < o.cores)
    o.threadsChoice = formatString(
        "of %d cores: a decode step of %.2fM multiply-adds is too little "
        "work to share among more; --threads N chooses",
        o.cores, work / 1e6);
}

Expected<runtime::JitOptions> jitOptions(const Options &o,
                                               const model::Config &c) {
  runtime::JitOptions j;
  j.threads = o.threads;
  j.compute = o.compute;
  if (o.target == "cuda")
    j.target = runtime::Target::Cuda;
  // The GPU kernels widen bf16 and f16 weights as they load them; block-
  // quantized ones would be dequantized whole at every call, slower than
  // f32 (docs/gpu.md).
  if (o.target == "cuda" && model::isQuantized(c.dtype))
    return flagError("--target cuda takes f32, bf16 or f16 weights so far, "
                     "and these matrices are " +
                     std::string(model::dtypeName(c.dtype)) +
                     " (tlm-run quantize --dtype bf16 converts them)");
  if (o.optLevel == "auto") {
    // Tiered like any JIT: below 1M parameters a whole run takes less time
    // than O3 compilation (tiny.json: 0.7 s at O0 against 2.7 s at O3,
    // measured), so the quick compile wins.
    j.optLevel = model::parameterCount(c) < 1000000 ? 0 : 3;
  } else if (o.optLevel.size() != 1 || o.optLevel[0] < '0' ||
             o.optLevel[0] > '3') {
    return flagError("--opt-level must be 0, 1, 2, 3 or auto, found '" +
                     o.optLevel + "'");
  } else {
    j.optLevel = o.optLevel[0] - '0';
  }
  // LLVM's O3 pipeline with its unroller and vectorizers only on request.
  // Against O3 without them it had made cs336-ts 13-18% faster (it unrolls
  // a small model's short loops fully); against the cleanup pipeline that
  // replaced it (CpuCodegen.cpp), cs336-ts ran as fast (on vs off, 6 alternated
  // runs each, 1 thread: decode 7981 vs 7833 tok/s, prefill 100k vs 94k tok/s,
  // medians; 2 threads: 4791 vs 6332 and 80k vs 113k) and compiled in
  // 574 instead of 959 ms (1 thread) and 700 instead of 1067 ms (2). In
  // small.json it unrolls loops our passes emitted unrolled already.
  if (o.llvmLoops == "auto")
    j.llvmLoopTransforms = false;
  else if (o.llvmLoops == "on" || o.llvmLoops == "off")
    j.llvmLoopTransforms = o.llvmLoops == "on";
  else
    return flagError("--llvm-loops must be on, off or auto, found '" +
                     o.llvmLoops + "'");
  if (o.lanes == "16" || o.lanes == "8" || o.lanes == "4")
    j.lanes = std::stoi(o.lanes);
  else if (o.lanes != "auto")
    return flagError("--lanes must be 16, 8, 4 or auto, found '" + o.lanes +
                     "'");
  if (o.gemvColumns == "auto")
    j.gemvColumns = 0; // the Session's choice for the model
  else if (o.gemvColumns == "1" || o.gemvColumns == "2" ||
           o.gemvColumns == "4" || o.gemvColumns == "8" ||
           o.gemvColumns == "16")
    j.gemvColumns = std::stoi(o.gemvColumns);
  else
    return flagError("--gemv-columns must be 1, 2, 4, 8, 16 or auto, found '" +
                     o.gemvColumns + "'");
  if (o.attentionBlock < 8)
    return flagError("--attention-block must be 8 or more, found " +
                     std::to_string(o.attentionBlock));
  j.attentionBlock = o.attentionBlock;
  if (o.tensorCores != "off" && o.tensorCores != "tf32" &&
      o.tensorCores != "bf16")
    return flagError("--tensor-cores must be off, tf32 or bf16, found '" +
                     o.tensorCores + "'");
  j.tensorCores = o.tensorCores == "off" ? "none" : o.tensorCores;
  if (j.tensorCores != "none" && j.target != runtime::Target::Cuda)
    return flagError("--tensor-cores " + o.tensorCores +
                     " needs --target cuda");
  // The switches of passes/pipelines/CpuSwitches.def, or GpuSwitches.def
  // for cuda; the error for an unknown name lists them.
  if (Error err =
          j.target == runtime::Target::Cuda
              ? applyDisable(o.disable, mlir::tlm::gpuSwitches(),
                             j.gpuSwitches, " for --target cuda")
              : applyDisable(o.disable, mlir::tlm::cpuSwitches(),
                             j.switches, ""))
    return std::move(err);
  if (Error err = checkCompute(o, c, j))
    return std::move(err);
  // MLIR's own flags (--mlir-timing, IR printing) observe the pipeline,
  // which a cache hit would not run.
  bool observed =
      llvm::any_of(llvm::cl::getRegisteredOptions(), [](const auto &entry) {
        return entry.first.starts_with("mlir-") &&
               entry.second->getNumOccurrences() > 0;
      });
  if (!o.noCache && !observed)
    j.cacheDir =
        o.cacheDir.empty() ? runtime::defaultCacheDir() : o.cacheDir;
  j.configurePassManager = [](mlir::PassManager &pm) {
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return mlir::failure();
    // --mlir-timing: the pass manager owns the timer and prints the report
    // when the pipeline is done. Enabled last, so it times only passes.
    auto timing = std::make_unique<mlir::DefaultTimingManager>();
    mlir::applyDefaultTimingManagerCLOptions(*timing);
    if (timing->isEnabled())
      pm.enableTiming(std::move(timing));
    return mlir::success();
  };
  return std::move(j);
}

} // namespace tlm::cli
