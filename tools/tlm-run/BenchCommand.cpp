//===- BenchCommand.cpp - tlm-run bench -----------------------------------===//
//
// Compile time, prefill and decode speed and peak memory of one model
// (docs/performance.md#one-model-tlm-run-bench).
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Run.h"

#include "lib/runtime/Session.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <vector>

namespace tlm::cli {

llvm::Error runBench(const Options &o) {
  if (o.promptLen < 1 || o.gen < 0 || o.batch < 1)
    return userError("--prompt-len and --batch must be >= 1, --gen >= 0");
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  if (int64_t(o.promptLen) + o.gen > config->contextLength)
    return userError("--prompt-len + --gen (" +
                     llvm::Twine(int64_t(o.promptLen) + o.gen) +
                     ") exceeds context_length (" +
                     llvm::Twine(config->contextLength) + ")");
  auto run = setUp(o, o.batch);
  if (!run)
    return run.takeError();
  runtime::Session &s = *run->session;
  int64_t vocab = run->config.vocabSize, batch = o.batch;
  std::vector<int64_t> prompt(batch * o.promptLen);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = (i * 7919) % vocab;
  double rssBeforeSteps = currentRssMb();
  // Prefill and decode as generation runs them: each step computes the
  // logits of its last position only.
  std::vector<float> logits(batch * vocab);

  // Warm-up with the measured shapes: one prefill of the whole prompt and
  // one decode step, then start over. The first step of a size touches its
  // activation memory for the first time (page faults, ~12 µs per 4 KiB
  // page on this VM kind: ~47 ms of a 97 ms prefill of 128 tokens on a
  // one-layer d_ff 8192 model); a server pays that once, not per request.
  if (llvm::Error err =
          toLlvm(s.stepLast(prompt.data(), o.promptLen, logits.data())))
    return asUserError(std::move(err));
  if (o.promptLen < run->config.contextLength)
    if (llvm::Error err = toLlvm(s.stepLast(prompt.data(), 1, logits.data())))
      return asUserError(std::move(err));
  s.reset();
  // Activations: the most the warm-up steps added to resident memory (the
  // logits, the compiled code's temporaries), less the KV cache pages they
  // touched and, with mmapped weights, the weight pages they read in; both
  // are counted apart. If loading the weights peaked higher, this
  // undercounts, which only makes the budget stricter. The KV pages are
  // asked of the kernel (mincore): on huge pages a row touches 2 MiB.
  double kvRowsMb = s.kvCacheResidentBytes() / 1048576.0;
  double mappedWeightsMb =
      o.weightsLoad == "mmap" ? run->weights.bytes() / 1048576.0 : 0.0;
  double activationsMb =
      std::max(0.0, peakRssMb() - rssBeforeSteps - kvRowsMb - mappedWeightsMb);

  auto start = Clock::now();
  if (llvm::Error err =
          toLlvm(s.stepLast(prompt.data(), o.promptLen, logits.data())))
    return asUserError(std::move(err));
  double prefillMs = msSince(start);
  std::vector<int64_t> next(batch, 1);
  start = Clock::now();
  for (int i = 0; i < o.gen; ++i)
    if (llvm::Error err = toLlvm(s.stepLast(next.data(), 1, logits.data())))
      return asUserError(std::move(err));
  double decodeMs = msSince(start);
  double prefillTokS = batch * o.promptLen / (prefillMs / 1000.0);
  double decodeTokS = o.gen ? batch * o.gen / (decodeMs / 1000.0) : 0.0;
  int64_t params = model::parameterCount(run->config);
  int threads = o.threads;
  // The memory budget (docs/memory.md): one copy of the weights with 20%
  // to spare, the whole KV cache, the activations, and what the process
  // held before it read its first input (tlm-run's and libLLVM/libMLIR's
  // code and relocated data).
  double weightsMb = run->weights.bytes() / 1048576.0;
  double kvMb = runtime::Session::kvCacheBytes(run->config, batch) / 1048576.0;
  double boundMb = 1.2 * weightsMb + kvMb + activationsMb + o.startRssMb;
  double peakMb = peakRssMb();
  // A hit's compile_ms is the load of the stored code (docs/jit.md).
  const char *cache = o.noCache || o.target == "cuda"            ? "off"
                      : run->session->program().stats().cacheHit ? "hit"
                                                                 : "miss";

  llvm::outs() << llvm::format(
      "config        %s\nparams        %lld\ntarget        %s\nthreads       "
      "%d\ncache         %s\n"
      "compile       %.1f ms (MLIR passes %.1f ms, LLVM O%u %.1f ms on %u "
      "threads)\n"
      "prefill       %.1f ms for %d x %d "
      "tokens "
      "(%.1f tok/s)\ndecode        %.2f tok/s over %d steps\npeak RSS      "
      "%.1f MB (weights %.1f MB, KV cache %.1f MB, activations %.1f MB, "
      "process at start %.1f MB)\nRSS bound     %.1f MB (1.2 x weights + KV "
      "cache + activations + process at start)\n",
      o.config.c_str(), (long long)params, o.target.c_str(), threads, cache,
      run->compileMs, run->session->program().stats().pipelineMs,
      run->session->program().stats().optLevel,
      run->session->program().stats().codegenMs,
      run->session->program().stats().compileThreads, prefillMs, (int)batch,
      o.promptLen, prefillTokS, decodeTokS, o.gen, peakMb, weightsMb, kvMb,
      activationsMb, o.startRssMb, boundMb);
  if (o.json)
    llvm::outs() << llvm::format(
        "{\"compile_ms\": %.3f, \"pipeline_ms\": %.3f, \"codegen_ms\": %.3f, "
        "\"prefill_ms\": %.3f, \"prefill_tok_s\": %.3f, "
        "\"decode_tok_s\": %.3f, \"peak_rss_mb\": %.1f, \"weights_mb\": %.1f, "
        "\"kv_cache_mb\": %.1f, \"activations_mb\": %.1f, "
        "\"start_rss_mb\": %.1f, \"rss_bound_mb\": %.1f, \"params\": %lld, "
        "\"threads\": %d, \"compile_threads\": %u, \"target\": \"%s\", "
        "\"cache\": \"%s\"}\n",
        run->compileMs, run->session->program().stats().pipelineMs,
        run->session->program().stats().codegenMs, prefillMs, prefillTokS,
        decodeTokS, peakMb, weightsMb, kvMb, activationsMb, o.startRssMb,
        boundMb, (long long)params, threads,
        run->session->program().stats().compileThreads, o.target.c_str(),
        cache);
  return llvm::Error::success();
}

} // namespace tlm::cli
