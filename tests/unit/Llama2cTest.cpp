//===- Llama2cTest.cpp - stories260K reproduces llama2.c's greedy run -----===//
//
// Imports data/models/stories260K.bin and decodes greedily from BOS,
// once with the KV cache (prefill + decode steps) and once recomputing the
// whole sequence each step. Both must give exactly the 64 ids that
// llama2.c's reference program printed, which the test reads from the
// models README (the oracle stays with the data, not in this file).
//
//===----------------------------------------------------------------------===//

#include "lib/model/Llama2c.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Sampler.h"
#include "lib/runtime/Session.h"
#include "tests/unit/TestData.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

std::string modelsDir() { return tlm::test::dataDir() + "/models"; }

/// The id list in the first ``` block after "first 64 generated ids are".
std::vector<int64_t> referenceIds(const std::string &readme) {
  std::ifstream in(readme);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t at = text.find("first 64 generated ids are");
  if (at == std::string::npos)
    return {};
  size_t open = text.find("```", at), close = text.find("```", open + 3);
  std::istringstream ids(text.substr(open + 3, close - open - 3));
  std::vector<int64_t> out;
  for (int64_t id; ids >> id;)
    out.push_back(id);
  return out;
}

class Stories260K : public ::testing::Test {
protected:
  void SetUp() override {
    std::string bin = modelsDir() + "/stories260K.bin";
    if (::access(bin.c_str(), R_OK) != 0)
      FAIL() << bin << " missing (see TLM_DATA_DIR)";
    expected = referenceIds(modelsDir() + "/README.md");
    ASSERT_EQ(expected.size(), 64u) << "cannot read the reference ids";
    dir = ::testing::TempDir() + "tlm-stories260K-" + std::to_string(getpid());
    auto imported = model::importLlama2c(bin, dir);
    ASSERT_TRUE(bool(imported)) << imported.takeError().message();
    // The written config must parse back to the same model.
    auto config = model::loadConfig(dir + "/config.json");
    ASSERT_TRUE(bool(config)) << config.takeError().message();
    EXPECT_EQ(config->kvHeads(), 4);
    EXPECT_EQ(config->numHeads, 8);
    EXPECT_TRUE(config->tieEmbeddings);
    auto weights = model::Weights::load(*config, dir + "/weights.safetensors");
    ASSERT_TRUE(bool(weights)) << weights.takeError().message();
    auto session = runtime::Session::create(*config, weights->pointers());
    ASSERT_TRUE(bool(session)) << session.takeError().message();
    this->config = *config;
    this->weights.emplace(std::move(*weights));
    this->session = std::move(*session);
  }

  std::vector<int64_t> expected;
  std::string dir;
  model::Config config;
  std::optional<model::Weights> weights;
  std::unique_ptr<runtime::Session> session;
};

TEST_F(Stories260K, GreedyWithKVCacheMatchesLlama2c) {
  runtime::Sampler greedy(0.0, 1.0, 0);
  std::vector<float> logits(config.vocabSize);
  int64_t token = 1; // BOS
  std::vector<int64_t> got;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_FALSE(bool(session->step(&token, 1, logits.data())));
    token = greedy.sample(logits.data(), config.vocabSize);
    got.push_back(token);
  }
  EXPECT_EQ(got, expected);
}

TEST_F(Stories260K, GreedyWithFullForwardMatchesLlama2c) {
  runtime::Sampler greedy(0.0, 1.0, 0);
  std::vector<int64_t> seq = {1};
  for (size_t i = 0; i < expected.size(); ++i) {
    std::vector<float> logits(seq.size() * config.vocabSize);
    session->reset();
    ASSERT_FALSE(bool(session->step(seq.data(), seq.size(), logits.data())));
    seq.push_back(greedy.sample(
        logits.data() + (seq.size() - 1) * config.vocabSize, config.vocabSize));
  }
  EXPECT_EQ(std::vector<int64_t>(seq.begin() + 1, seq.end()), expected);
}

TEST(Llama2cImport, RejectsTruncatedFile) {
  std::string bin = modelsDir() + "/stories260K.bin";
  std::ifstream in(bin, std::ios::binary);
  ASSERT_TRUE(bool(in)) << bin << " missing (see TLM_DATA_DIR)";
  std::string bytes(1000, '\0');
  in.read(bytes.data(), bytes.size());
  std::string cut =
      ::testing::TempDir() + "tlm-cut-" + std::to_string(getpid()) + ".bin";
  std::ofstream(cut, std::ios::binary) << bytes;
  auto result = model::importLlama2c(cut, cut + ".out");
  ASSERT_FALSE(bool(result));
  std::string message = result.takeError().message();
  EXPECT_NE(message.find("the file ends at byte 1000 but "
                         "token_embeddings.weight needs bytes 28..131100"),
            std::string::npos)
      << message;
}

} // namespace
