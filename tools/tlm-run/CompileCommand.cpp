//===- CompileCommand.cpp - tlm-run compile -------------------------------===//
//
// Writes an ahead-of-time artifact: the same pipelines and code generation
// as the JIT, the objects linked into a shared library that the model
// commands run with --artifact (lib/runtime/Artifact.h, docs/artifacts.md).
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"
#include "tools/common/Progress.h"

#include "lib/io/FileIO.h"
#include "lib/model/Config.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace tlm::cli {

Error runCompile(const Options &o) {
  if (o.output.empty())
    return flagError("--output is required (the artifact to write, e.g. "
                     "model.so)");
  if (Error err = checkThreads(o))
    return err;
  if (o.target != "cpu" && o.target != "cuda")
    return flagError("--target must be cpu or cuda, found '" + o.target + "'");
  if (Error err =
          io::refuseOverwritingInput(o.output, {o.config}, "--output"))
    return err;
  // Checked before the compile, as a user's mistake: an artifact is a
  // regular file (dlopen loads it back), never written into a device or a
  // FIFO, and never renamed over one.
  if (Error err = io::checkFileOutput(o.output))
    return Error::withExitCode(1, "--output " + err.message());
  if (!o.cpu.empty())
    if (Error err = fromLlvm(runtime::checkCpuName(o.cpu)))
      return err;
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  // The same compile as every model command's; with an artifact path the
  // code is linked there (and loaded back, as a check).
  auto jit = jitOptions(o, *config);
  if (!jit)
    return jit.takeError();
  runtime::ArtifactRequest artifact;
  artifact.path = o.output;
  artifact.cpu = o.cpu;
  auto start = Clock::now();
  auto program = runtime::Session::compileProgram(*config, *jit, &artifact);
  if (!program) {
    Error err = program.takeError();
    if (err.kind() == ErrorKind::Unavailable)
      return Error::withExitCode(3, "target " + o.target + ": " +
                                                err.message());
    return Error::withExitCode(2,
                                       "compilation failed: " + err.message());
  }
  uint64_t bytes = 0;
  llvm::sys::fs::file_size(o.output, bytes);
  const runtime::ArtifactManifest *m = (*program)->artifactManifest();
  llvm::raw_ostream &out = wroteStream(o.output);
  out << "wrote " << o.output << " (" << bytes / 1024 << " KiB, "
      << m->entries.size() << " entries, ";
  if (m->target == "cuda")
    out << "cuda " << m->chip << " cubin + PTX"
                 << (jit->tensorCores == "tf32"   ? ", TF32 tensor cores"
                     : jit->tensorCores == "bf16" ? ", BF16 tensor cores"
                                                  : "")
                 << ", host " << m->cpu;
  else
    out << m->threads << (m->threads == 1 ? " thread, " : " threads, ")
        << m->cpu << (m->compute == "f32" ? "" : ", " + m->compute + " compute");
  out << ") in " << durationText(msSince(start)) << "\n";
  return Error::success();
}

} // namespace tlm::cli
