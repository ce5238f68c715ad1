//===- TrainCommands.cpp - tlm-run grad -----------------------------------===//
//
// The training commands, which need the compiler (the step is compiled for
// the config in this process).
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"

#include "lib/compiler/TrainCompile.h"
#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/runtime/Training.h"

#include <cstdio>

namespace tlm::cli {

namespace {

/// The config (f32 weights only) and a trainer holding the step compiled
/// for it, started from --weights or the seeded weights.
Expected<std::unique_ptr<runtime::Trainer>> makeTrainer(const Options &o,
                                                        model::Config &config) {
  if (config.dtype != model::WeightDtype::F32)
    return userError("training is f32, but the weights are " +
                     std::string(model::dtypeName(config.dtype)) +
                     " (tlm-run quantize --dtype f32 converts them)");
  auto weights = loadWeights(o, config);
  if (!weights)
    return weights.takeError();
  auto jit = jitOptions(o, config);
  if (!jit)
    return jit.takeError();
  auto program = runtime::compileTrainingProgram(config, *jit);
  if (!program)
    return program.takeError();
  return runtime::Trainer::create(config, std::move(*program), *weights);
}

} // namespace

Error runGrad(const Options &o) {
  if (o.tokensFile.empty())
    return flagError("grad needs --tokens-file T.safetensors: 'tokens' of "
                     "shape (batch, seq + 1)");
  if (o.output.empty())
    return flagError("grad needs --output G.safetensors");
  if (Error err = io::refuseOverwritingInput(
          o.output, {o.config, o.weights, o.tokensFile}, "--output"))
    return err;
  if (Error err = checkThreads(o))
    return err;
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  auto tokens = io::readTokenFile(o.tokensFile);
  if (!tokens)
    return tokens.takeError();
  auto batch = runtime::splitTokens(*tokens, *config);
  if (!batch)
    return userError(o.tokensFile + ": " + batch.takeError().message());
  auto trainer = makeTrainer(o, *config);
  if (!trainer)
    return trainer.takeError();
  auto loss = (*trainer)->computeGradients(*batch);
  if (!loss)
    return loss.takeError();

  float lossValue = *loss;
  std::vector<io::TensorView> out{
      {"loss", io::DType::F32, {1}, &lossValue}};
  const auto &specs = (*trainer)->specs();
  for (size_t i = 0; i < specs.size(); ++i)
    out.push_back({"grad." + specs[i].name, io::DType::F32, specs[i].shape,
                   (*trainer)->gradients()[i].data()});
  if (Error err = io::writeSafeTensors(o.output, out))
    return err;
  if (!o.quiet)
    std::printf("loss: %.6f\ngradients: %zu tensors in %s\n", lossValue,
                specs.size(), o.output.c_str());
  return Error::success();
}

} // namespace tlm::cli
