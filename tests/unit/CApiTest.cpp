//===- CApiTest.cpp - include/tlm/tlm.h on a compiled artifact ------------===//

#include "include/tlm/tlm.h"

#include "lib/io/SafeTensors.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"

#include "llvm/Support/FileSystem.h"

#include <memory>
#include <string>
#include <vector>

#include <atomic>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

model::Config smallConfig() {
  auto c = model::parseConfig(R"({"vocab_size": 48, "context_length": 16,
      "d_model": 32, "num_layers": 2, "num_heads": 2, "d_ff": 64,
      "rope_theta": 10000.0})");
  EXPECT_TRUE(bool(c)) << c.takeError().message();
  return *c;
}

/// A fresh artifact of `config` (smallConfig()) on one thread.
std::string compileArtifact(const model::Config &config = smallConfig()) {
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("tlm-capi", "so", path));
  runtime::ArtifactRequest artifact;
  artifact.path = path.str().str();
  auto program = runtime::Session::compileProgram(config, {}, &artifact);
  EXPECT_TRUE(bool(program)) << program.takeError().message();
  return path.str().str();
}

/// An artifact's model, seeded weights and a session of one sequence,
/// freed together; `ok` says whether each was made.
struct Opened {
  explicit Opened(const std::string &path, uint64_t seed = 0) {
    ok = tlm_model_load(path.c_str(), &model) == TLM_OK &&
         tlm_weights_from_seed(model, seed, &weights) == TLM_OK &&
         tlm_session_create(model, weights, 1, &session) == TLM_OK;
  }
  ~Opened() {
    tlm_session_free(session);
    tlm_weights_free(weights);
    tlm_model_free(model);
  }
  tlm_model *model = nullptr;
  tlm_weights *weights = nullptr;
  tlm_session *session = nullptr;
  bool ok = false;
};

TEST(CApi, SeededAndCallerWeightsGiveTheSameLogits) {
  std::string path = compileArtifact();
  tlm_model *model = nullptr;
  ASSERT_EQ(tlm_model_load(path.c_str(), &model), TLM_OK) << tlm_last_error();
  EXPECT_EQ(tlm_model_vocab_size(model), 48);
  EXPECT_EQ(tlm_model_context_length(model), 16);
  EXPECT_EQ(tlm_model_threads(model), 1);
  EXPECT_EQ(std::string(tlm_model_config(model)),
            model::configToJson(smallConfig()));

  tlm_weights *seeded = nullptr;
  ASSERT_EQ(tlm_weights_from_seed(model, 7, &seeded), TLM_OK);
  // The same tensors, owned by the caller and passed in place.
  auto own = model::Weights::init(smallConfig(), 7, model::InitScheme::Module);
  ASSERT_TRUE(bool(own));
  ASSERT_EQ(tlm_model_num_weights(model), own->pointers().size());
  tlm_weights *borrowed = nullptr;
  ASSERT_EQ(tlm_weights_from_memory(model, own->pointers().data(),
                                    own->pointers().size(), &borrowed),
            TLM_OK);

  std::vector<int64_t> ids = {1, 5, 9, 2};
  std::vector<float> a(ids.size() * 48), b(ids.size() * 48);
  tlm_session *sa = nullptr, *sb = nullptr;
  ASSERT_EQ(tlm_session_create(model, seeded, 1, &sa), TLM_OK)
      << tlm_last_error();
  ASSERT_EQ(tlm_session_create(model, borrowed, 1, &sb), TLM_OK);
  ASSERT_EQ(tlm_session_prefill(sa, ids.data(), ids.size(), a.data()), TLM_OK);
  ASSERT_EQ(tlm_session_prefill(sb, ids.data(), ids.size(), b.data()), TLM_OK);
  EXPECT_EQ(a, b);
  EXPECT_EQ(tlm_session_position(sa), 4);
  // The last row of prefill is what decode writes.
  tlm_session_reset(sa);
  std::vector<float> last(48);
  ASSERT_EQ(tlm_session_decode(sa, ids.data(), ids.size(), last.data()),
            TLM_OK);
  EXPECT_EQ(last, std::vector<float>(a.end() - 48, a.end()));

  tlm_session_free(sa);
  tlm_session_free(sb);
  tlm_weights_free(seeded);
  tlm_weights_free(borrowed);
  tlm_model_free(model);
  llvm::sys::fs::remove(path);
}

// Two prompts of 5 and 2 tokens in one session: one right-padded prefill,
// the shorter cut back to its length, then both decode together, each at
// its own position. Every row equals the same prompt's run alone.
TEST(CApi, SequencesOfDifferentLengthsDecodeTogether) {
  std::string path = compileArtifact();
  tlm_model *model = nullptr;
  ASSERT_EQ(tlm_model_load(path.c_str(), &model), TLM_OK) << tlm_last_error();
  tlm_weights *w = nullptr;
  ASSERT_EQ(tlm_weights_from_seed(model, 3, &w), TLM_OK);
  const int64_t vocab = 48;
  std::vector<std::vector<int64_t>> prompts = {{1, 5, 9, 2, 7}, {3, 11}};
  std::vector<int64_t> next = {4, 6}; // one more token each

  // Alone: each prompt's last prompt row and the row after its next token.
  std::vector<std::vector<float>> alone;
  for (size_t b = 0; b < 2; ++b) {
    tlm_session *s = nullptr;
    ASSERT_EQ(tlm_session_create(model, w, 1, &s), TLM_OK);
    std::vector<float> row(vocab);
    ASSERT_EQ(tlm_session_decode(s, prompts[b].data(), prompts[b].size(),
                                 row.data()),
              TLM_OK);
    alone.push_back(row);
    ASSERT_EQ(tlm_session_decode(s, &next[b], 1, row.data()), TLM_OK);
    alone.push_back(row);
    tlm_session_free(s);
  }

  tlm_session *s = nullptr;
  ASSERT_EQ(tlm_session_create(model, w, 2, &s), TLM_OK);
  std::vector<int64_t> padded = {1, 5, 9, 2, 7, 3, 11, 0, 0, 0};
  std::vector<float> all(2 * 5 * vocab);
  ASSERT_EQ(tlm_session_prefill(s, padded.data(), 5, all.data()), TLM_OK);
  ASSERT_EQ(tlm_session_truncate(s, 1, 2), TLM_OK) << tlm_last_error();
  EXPECT_EQ(tlm_session_sequence_position(s, 0), 5);
  EXPECT_EQ(tlm_session_sequence_position(s, 1), 2);
  EXPECT_EQ(tlm_session_position(s), 5);
  auto near = [](const float *a, const std::vector<float> &b) {
    for (size_t i = 0; i < b.size(); ++i)
      if (std::fabs(a[i] - b[i]) > 1e-4 + 1e-4 * std::fabs(b[i]))
        return false;
    return true;
  };
  EXPECT_TRUE(near(all.data() + 4 * vocab, alone[0]));
  EXPECT_TRUE(near(all.data() + (5 + 1) * vocab, alone[2]));
  std::vector<float> rows(2 * vocab);
  ASSERT_EQ(tlm_session_decode(s, next.data(), 1, rows.data()), TLM_OK);
  EXPECT_TRUE(near(rows.data(), alone[1]));
  EXPECT_TRUE(near(rows.data() + vocab, alone[3]));

  EXPECT_EQ(tlm_session_truncate(s, 1, 9), TLM_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tlm_last_error()).find("cannot be cut to 9"),
            std::string::npos);
  EXPECT_EQ(tlm_session_truncate(s, 2, 0), TLM_ERROR_ARGUMENT);
  EXPECT_EQ(tlm_session_truncate(nullptr, 0, 0), TLM_ERROR_ARGUMENT);
  tlm_session_free(s);
  tlm_weights_free(w);
  tlm_model_free(model);
  llvm::sys::fs::remove(path);
}

TEST(CApi, MistakesAreStatusesWithMessages) {
  tlm_model *model = nullptr;
  EXPECT_EQ(tlm_model_load(nullptr, &model), TLM_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tlm_last_error()).find("null"), std::string::npos);
  EXPECT_EQ(tlm_model_load("/no/such/model.so", &model), TLM_ERROR_FILE);
  EXPECT_NE(std::string(tlm_last_error()).find("/no/such/model.so"),
            std::string::npos);
  EXPECT_EQ(model, nullptr);

  std::string path = compileArtifact();
  ASSERT_EQ(tlm_model_load(path.c_str(), &model), TLM_OK);
  const void *none[1] = {nullptr};
  tlm_weights *w = nullptr;
  EXPECT_EQ(tlm_weights_from_memory(model, none, 1, &w), TLM_ERROR_MISMATCH);
  EXPECT_NE(std::string(tlm_last_error()).find("takes"), std::string::npos);
  ASSERT_EQ(tlm_weights_from_seed(model, 0, &w), TLM_OK);
  tlm_session *s = nullptr;
  EXPECT_EQ(tlm_session_create(model, w, 0, &s), TLM_ERROR_ARGUMENT);
  ASSERT_EQ(tlm_session_create(model, w, 1, &s), TLM_OK);
  std::vector<float> logits(48);
  int64_t bad = 48;
  EXPECT_EQ(tlm_session_decode(s, &bad, 1, logits.data()), TLM_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tlm_last_error()).find("out of range"),
            std::string::npos);
  std::vector<int64_t> many(17, 1);
  std::vector<float> more(17 * 48);
  EXPECT_EQ(tlm_session_prefill(s, many.data(), 17, more.data()),
            TLM_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tlm_last_error()).find("context_length"),
            std::string::npos);
  tlm_sampler *sampler = nullptr;
  EXPECT_EQ(tlm_sampler_create(-1.0, 1.0, 0, &sampler), TLM_ERROR_ARGUMENT);
  EXPECT_EQ(tlm_sampler_sample(nullptr, logits.data(), 48), -1);
  tlm_session_free(s);
  tlm_weights_free(w);
  tlm_model_free(model);
  llvm::sys::fs::remove(path);
}

TEST(CApi, StatusesComeFromTheFailureNotItsWords) {
  // A path naming "memory", "expected" or "was compiled for" is still a
  // missing file (the status was once guessed from the message's words).
  tlm_model *model = nullptr;
  EXPECT_EQ(tlm_model_load("/no/memory/expected/was compiled for/m.so", &model),
            TLM_ERROR_FILE);
  std::string path = compileArtifact();
  ASSERT_EQ(tlm_model_load(path.c_str(), &model), TLM_OK);
  // Weights of another model: a mismatch, whatever the file is called.
  llvm::SmallString<128> other;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("memory", "st", other));
  auto big = model::parseConfig(R"({"vocab_size": 48, "context_length": 16,
      "d_model": 64, "num_layers": 2, "num_heads": 2, "d_ff": 64,
      "rope_theta": 10000.0})");
  ASSERT_TRUE(bool(big));
  auto w64 = model::Weights::init(*big, 1, model::InitScheme::Module);
  ASSERT_TRUE(bool(w64));
  std::vector<io::TensorView> views;
  std::vector<model::WeightSpec> specs = model::weightSpecs(*big);
  for (size_t i = 0; i < specs.size(); ++i)
    views.push_back(
        {specs[i].name, specs[i].dtype, specs[i].shape, w64->pointers()[i]});
  ASSERT_FALSE(bool(io::writeSafeTensors(other.str().str(), views)));
  tlm_weights *w = nullptr;
  EXPECT_EQ(tlm_weights_from_file(model, other.c_str(), &w),
            TLM_ERROR_MISMATCH);
  EXPECT_NE(std::string(tlm_last_error()).find("has shape"),
            std::string::npos);
  llvm::sys::fs::remove(other);
  tlm_model_free(model);
  llvm::sys::fs::remove(path);
}

TEST(CApi, HugeCountsAndNonFiniteWeightsAreRefused) {
  std::string path = compileArtifact();
  Opened seeded(path);
  ASSERT_TRUE(seeded.ok) << tlm_last_error();
  tlm_model *model = seeded.model;
  std::vector<float> logits(48);
  int64_t id = 1;
  ASSERT_EQ(tlm_session_decode(seeded.session, &id, 1, logits.data()), TLM_OK);
  // past + count would wrap to a small number and pass a naive check, then
  // read far past `ids`.
  EXPECT_EQ(tlm_session_decode(seeded.session, &id, INT64_MAX, logits.data()),
            TLM_ERROR_ARGUMENT);
  EXPECT_NE(std::string(tlm_last_error()).find("context_length"),
            std::string::npos);
  EXPECT_EQ(tlm_session_position(seeded.session), 1);
  tlm_session *s = nullptr;

  // NaN in the caller's weights: tlm-run refuses such a file, and so does
  // the C API, naming the weight.
  size_t n = tlm_model_num_weights(model);
  std::vector<std::vector<float>> tensors(n);
  std::vector<const void *> pointers(n);
  for (size_t i = 0; i < n; ++i) {
    tensors[i].assign(tlm_model_weight_elements(model, i), 0.01f);
    pointers[i] = tensors[i].data();
  }
  tensors[n - 1][5] = NAN;
  tlm_weights *poisoned = nullptr;
  ASSERT_EQ(tlm_weights_from_memory(model, pointers.data(), n, &poisoned),
            TLM_OK);
  ASSERT_EQ(tlm_session_create(model, poisoned, 1, &s), TLM_OK);
  EXPECT_EQ(tlm_session_decode(s, &id, 1, logits.data()), TLM_ERROR_FILE);
  EXPECT_NE(std::string(tlm_last_error())
                .find("weight '" +
                      std::string(tlm_model_weight_name(model, n - 1)) +
                      "' holds NaN at element 5"),
            std::string::npos)
      << tlm_last_error();
  tlm_session_free(s);
  tlm_weights_free(poisoned);
  llvm::sys::fs::remove(path);
}

TEST(CApi, AReplacedFileIsLoadedAnewWhileTheOldIsOpen) {
  // Artifact A at `path`, a session on it (its library stays loaded);
  // then another model's artifact renamed over `path`. glibc would hand
  // back the library already loaded under that name: the model loaded now
  // must be the new file's.
  std::string path = compileArtifact();
  Opened first(path);
  ASSERT_TRUE(first.ok) << tlm_last_error();
  model::Config other = smallConfig();
  other.vocabSize = 64;
  std::string replacement = compileArtifact(other);
  ASSERT_FALSE(llvm::sys::fs::rename(replacement, path));
  Opened second(path);
  ASSERT_TRUE(second.ok) << tlm_last_error();
  EXPECT_EQ(tlm_model_vocab_size(second.model), 64);
  std::vector<float> logits(64);
  int64_t id = 50; // in the new vocabulary, past the old one's 48
  EXPECT_EQ(tlm_session_decode(second.session, &id, 1, logits.data()), TLM_OK)
      << tlm_last_error();
  // The first session still runs its own code.
  std::vector<float> old(48);
  int64_t oldId = 1;
  EXPECT_EQ(tlm_session_decode(first.session, &oldId, 1, old.data()), TLM_OK);
  llvm::sys::fs::remove(path);
}

TEST(CApi, AnotherArtifactLoadsWhereAFreedHandlesFdWas) {
  // Two sessions on X load it under two /proc/self/fd names (glibc keeps
  // both on X's record); one is freed, so its fd number comes free while
  // its name still leads to X. Y, opened next on that number, must load
  // as Y.
  std::string x = compileArtifact();
  model::Config other = smallConfig();
  other.vocabSize = 64;
  std::string y = compileArtifact(other);
  Opened kept(x);
  ASSERT_TRUE(kept.ok) << tlm_last_error();
  auto freed = std::make_unique<Opened>(x);
  ASSERT_TRUE(freed->ok) << tlm_last_error();
  freed.reset();
  Opened second(y);
  ASSERT_TRUE(second.ok) << tlm_last_error();
  EXPECT_EQ(tlm_model_vocab_size(second.model), 64);
  std::vector<float> logits(64);
  int64_t id = 50;
  EXPECT_EQ(tlm_session_decode(second.session, &id, 1, logits.data()),
            TLM_OK)
      << tlm_last_error();
  llvm::sys::fs::remove(x);
  llvm::sys::fs::remove(y);
}

TEST(CApi, ThreadsSharingASessionTakeTurns) {
  std::string path = compileArtifact();
  Opened opened(path);
  ASSERT_TRUE(opened.ok) << tlm_last_error();
  tlm_session *s = opened.session;
  // Four threads, four tokens each, on one session of context 16: every
  // call whole (the cache grows by one token a call), none lost.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> logits(48);
      int64_t id = t + 1;
      for (int i = 0; i < 4; ++i)
        ok += tlm_session_decode(s, &id, 1, logits.data()) == TLM_OK;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(ok.load(), 16);
  EXPECT_EQ(tlm_session_position(s), 16);
  llvm::sys::fs::remove(path);
}

} // namespace
