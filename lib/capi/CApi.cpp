//===- CApi.cpp - include/tlm/tlm.h over the C++ runtime ------------------===//
//
// Thin wrappers: each handle owns its C++ object, each call turns an
// Error into a status and the thread's last message.
//
//===----------------------------------------------------------------------===//

#include "include/tlm/tlm.h"

#include "lib/model/Config.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Artifact.h"
#include "lib/runtime/Sampler.h"
#include "lib/runtime/Session.h"

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

using namespace tlm;

struct tlm_model {
  std::string path;
  runtime::ArtifactManifest manifest;
  model::Config config;
  std::vector<model::WeightSpec> specs;
};

struct tlm_weights {
  const tlm_model *model;
  std::optional<model::Weights> owned;
  std::vector<const void *> pointers;
};

struct tlm_session {
  std::unique_ptr<runtime::Session> session;
  /// The weights' pointers, for naming a non-finite one.
  const tlm_weights *weights = nullptr;
  /// Calls on one session from several threads take turns (docs/c-api.md).
  mutable std::mutex busy;
};

struct tlm_sampler {
  runtime::Sampler sampler;
};

namespace {

thread_local std::string lastError;

tlm_status fail(tlm_status status, const std::string &message) {
  lastError = message;
  return status;
}

tlm_status fail(tlm_status status, Error err) {
  return fail(status, err.message());
}

/// The status of a failed load, from the kind its maker gave it (never
/// from the words of the message: a path may hold any of them).
tlm_status failClassified(Error err) {
  switch (err.kind()) {
  case ErrorKind::Mismatch:
  case ErrorKind::Unavailable:
    return fail(TLM_ERROR_MISMATCH, std::move(err));
  case ErrorKind::OutOfMemory:
    return fail(TLM_ERROR_MEMORY, std::move(err));
  case ErrorKind::Failure:
    return fail(TLM_ERROR_FILE, std::move(err));
  }
  return fail(TLM_ERROR_FILE, std::move(err));
}

} // namespace

extern "C" {

int tlm_version(void) { return TLM_API_VERSION; }

const char *tlm_last_error(void) { return lastError.c_str(); }

tlm_status tlm_model_load(const char *artifactPath, tlm_model **model) {
  if (!artifactPath || !model)
    return fail(TLM_ERROR_ARGUMENT, "tlm_model_load: null argument");
  *model = nullptr;
  auto manifest = runtime::readArtifactManifest(artifactPath);
  if (!manifest)
    return failClassified(manifest.takeError());
  auto config = model::parseConfig(manifest->model);
  if (!config)
    return fail(TLM_ERROR_FILE,
                "artifact: " + std::string(artifactPath) +
                    ": its config: " + config.takeError().message());
  auto m = std::unique_ptr<tlm_model>(new (std::nothrow) tlm_model);
  if (!m)
    return fail(TLM_ERROR_MEMORY, "tlm_model_load: out of memory");
  m->path = artifactPath;
  m->manifest = std::move(*manifest);
  m->config = *config;
  m->specs = model::weightSpecs(m->config);
  *model = m.release();
  return TLM_OK;
}

void tlm_model_free(tlm_model *model) { delete model; }

const char *tlm_model_config(const tlm_model *model) {
  return model ? model->manifest.model.c_str() : "";
}
int64_t tlm_model_vocab_size(const tlm_model *model) {
  return model ? model->config.vocabSize : 0;
}
int64_t tlm_model_context_length(const tlm_model *model) {
  return model ? model->config.contextLength : 0;
}
int tlm_model_threads(const tlm_model *model) {
  return model ? model->manifest.threads : 0;
}
size_t tlm_model_num_weights(const tlm_model *model) {
  return model ? model->specs.size() : 0;
}
const char *tlm_model_weight_name(const tlm_model *model, size_t i) {
  return model && i < model->specs.size() ? model->specs[i].name.c_str()
                                          : nullptr;
}
size_t tlm_model_weight_elements(const tlm_model *model, size_t i) {
  return model && i < model->specs.size() ? model->specs[i].numElements() : 0;
}

const char *tlm_model_weight_dtype(const tlm_model *model, size_t i) {
  // dtypeName's views are of string literals: NUL-terminated.
  return model && i < model->specs.size()
             ? io::dtypeName(model->specs[i].dtype).data()
             : nullptr;
}

static tlm_status makeWeights(const tlm_model *model,
                              Expected<model::Weights> loaded,
                              tlm_weights **weights) {
  if (!loaded)
    return failClassified(loaded.takeError());
  auto w = std::unique_ptr<tlm_weights>(new (std::nothrow) tlm_weights);
  if (!w)
    return fail(TLM_ERROR_MEMORY, "weights: out of memory");
  w->model = model;
  w->owned.emplace(std::move(*loaded));
  w->pointers = w->owned->pointers();
  *weights = w.release();
  return TLM_OK;
}

tlm_status tlm_weights_from_file(const tlm_model *model, const char *path,
                                 tlm_weights **weights) {
  if (!model || !path || !weights)
    return fail(TLM_ERROR_ARGUMENT, "tlm_weights_from_file: null argument");
  *weights = nullptr;
  return makeWeights(model, model::Weights::load(model->config, path), weights);
}

tlm_status tlm_weights_from_seed(const tlm_model *model, uint64_t seed,
                                 tlm_weights **weights) {
  if (!model || !weights)
    return fail(TLM_ERROR_ARGUMENT, "tlm_weights_from_seed: null argument");
  *weights = nullptr;
  return makeWeights(
      model,
      model::Weights::init(model->config, seed, model::InitScheme::Module),
      weights);
}

tlm_status tlm_weights_from_memory(const tlm_model *model,
                                   const void *const *tensors, size_t count,
                                   tlm_weights **weights) {
  if (!model || !tensors || !weights)
    return fail(TLM_ERROR_ARGUMENT, "tlm_weights_from_memory: null argument");
  *weights = nullptr;
  if (count != model->specs.size())
    return fail(TLM_ERROR_MISMATCH,
                "tlm_weights_from_memory: the model takes " +
                    std::to_string(model->specs.size()) + " tensors, found " +
                    std::to_string(count));
  for (size_t i = 0; i < count; ++i)
    if (!tensors[i])
      return fail(TLM_ERROR_ARGUMENT, "tlm_weights_from_memory: tensor " +
                                          std::to_string(i) + " (" +
                                          model->specs[i].name + ") is null");
  auto w = std::unique_ptr<tlm_weights>(new (std::nothrow) tlm_weights);
  if (!w)
    return fail(TLM_ERROR_MEMORY, "weights: out of memory");
  w->model = model;
  w->pointers.assign(tensors, tensors + count);
  *weights = w.release();
  return TLM_OK;
}

void tlm_weights_free(tlm_weights *weights) { delete weights; }

tlm_status tlm_session_create(const tlm_model *model,
                              const tlm_weights *weights, int64_t batch,
                              tlm_session **session) {
  if (!model || !weights || !session)
    return fail(TLM_ERROR_ARGUMENT, "tlm_session_create: null argument");
  *session = nullptr;
  if (weights->model != model)
    return fail(TLM_ERROR_MISMATCH,
                "tlm_session_create: the weights were made for another model");
  if (batch < 1)
    return fail(TLM_ERROR_ARGUMENT, "tlm_session_create: batch (" +
                                        std::to_string(batch) +
                                        ") must be >= 1");
  runtime::SessionOptions options;
  options.batch = batch;
  options.artifact = model->path;
  std::string shortfall =
      runtime::Session::memoryShortfall(model->config, batch);
  if (!shortfall.empty())
    return fail(TLM_ERROR_MEMORY, shortfall);
  auto s = runtime::Session::open(model->config, options);
  if (!s)
    return failClassified(s.takeError());
  if (Error err = (*s)->setWeights(weights->pointers))
    return fail(TLM_ERROR_INTERNAL, std::move(err));
  auto handle = std::unique_ptr<tlm_session>(new (std::nothrow) tlm_session);
  if (!handle)
    return fail(TLM_ERROR_MEMORY, "session: out of memory");
  handle->session = std::move(*s);
  handle->weights = weights;
  *session = handle.release();
  return TLM_OK;
}

void tlm_session_free(tlm_session *session) { delete session; }

static tlm_status step(tlm_session *session, const int64_t *ids, int64_t count,
                       float *logits, bool lastOnly) {
  if (!session || !ids || !logits)
    return fail(TLM_ERROR_ARGUMENT, "tlm_session step: null argument");
  if (count < 1)
    return fail(TLM_ERROR_ARGUMENT, "tlm_session step: count (" +
                                        std::to_string(count) +
                                        ") must be >= 1");
  std::lock_guard<std::mutex> turn(session->busy);
  runtime::Session &s = *session->session;
  Error err =
      lastOnly ? s.stepLast(ids, count, logits) : s.step(ids, count, logits);
  if (err)
    return fail(TLM_ERROR_ARGUMENT, std::move(err));
  // What tlm-run refuses, the C API does too: NaN or Inf logits, with the
  // weight that holds one named. `count` fits the context, so the product
  // does not overflow.
  const model::Config &c = session->weights->model->config;
  int64_t rows = s.batch() * (lastOnly ? 1 : count);
  // The step has run: the session is past these tokens (docs/c-api.md).
  if (Error bad = runtime::checkLogitsFinite(c, session->weights->pointers,
                                             logits, rows * c.vocabSize))
    return fail(bad.exitCode() == 2 ? TLM_ERROR_INTERNAL : TLM_ERROR_FILE,
                std::move(bad));
  return TLM_OK;
}

tlm_status tlm_session_prefill(tlm_session *session, const int64_t *ids,
                               int64_t count, float *logits) {
  return step(session, ids, count, logits, /*lastOnly=*/false);
}

tlm_status tlm_session_decode(tlm_session *session, const int64_t *ids,
                              int64_t count, float *logits) {
  return step(session, ids, count, logits, /*lastOnly=*/true);
}

int64_t tlm_session_position(const tlm_session *session) {
  if (!session)
    return 0;
  std::lock_guard<std::mutex> turn(session->busy);
  return session->session->position();
}

void tlm_session_reset(tlm_session *session) {
  if (!session)
    return;
  std::lock_guard<std::mutex> turn(session->busy);
  session->session->reset();
}

int64_t tlm_session_sequence_position(const tlm_session *session, int64_t b) {
  if (!session || b < 0 || b >= session->session->batch())
    return 0;
  std::lock_guard<std::mutex> turn(session->busy);
  return session->session->position(b);
}

tlm_status tlm_session_truncate(tlm_session *session, int64_t b,
                                int64_t length) {
  if (!session)
    return fail(TLM_ERROR_ARGUMENT, "tlm_session_truncate: null session");
  std::lock_guard<std::mutex> turn(session->busy);
  if (Error err = session->session->truncate(b, length))
    return fail(TLM_ERROR_ARGUMENT,
                "tlm_session_truncate: " + err.message());
  return TLM_OK;
}

tlm_status tlm_sampler_create(double temperature, double topP, uint64_t seed,
                              tlm_sampler **sampler) {
  if (!sampler)
    return fail(TLM_ERROR_ARGUMENT, "tlm_sampler_create: null argument");
  *sampler = nullptr;
  if (!(temperature >= 0) || !(topP > 0 && topP <= 1))
    return fail(TLM_ERROR_ARGUMENT,
                "tlm_sampler_create: temperature must be >= 0 and top_p in "
                "(0, 1]");
  *sampler = new (std::nothrow) tlm_sampler{{temperature, topP, seed}};
  if (!*sampler)
    return fail(TLM_ERROR_MEMORY, "sampler: out of memory");
  return TLM_OK;
}

int64_t tlm_sampler_sample(tlm_sampler *sampler, const float *logits,
                           int64_t vocab) {
  if (!sampler || !logits || vocab < 1)
    return -1;
  return sampler->sampler.sample(logits, vocab);
}

void tlm_sampler_free(tlm_sampler *sampler) { delete sampler; }

} // extern "C"
