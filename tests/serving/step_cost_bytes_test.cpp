// The weight bytes a step reads (telemetry::estimate_step_cost) against the file's tensor
// table: every tensor once, except the embedding tables, of which a step reads the rows of its
// new tokens (token_embd unless the output is tied to it; gpt2's position_embd always).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/telemetry/step_cost.h"

namespace servescope::telemetry {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

struct FileBytes {
  uint64_t total = 0;
  uint64_t token_embd = 0, token_embd_rows = 0;
  uint64_t position_embd = 0, position_embd_rows = 0;
};

FileBytes file_bytes(const gguf::GgufFile& file) {
  FileBytes b;
  for (const gguf::TensorInfo& t : file.tensors()) {
    b.total += t.n_bytes;
    if (t.name == "token_embd.weight") b.token_embd = t.n_bytes, b.token_embd_rows = t.shape[1];
    if (t.name == "position_embd.weight")
      b.position_embd = t.n_bytes, b.position_embd_rows = t.shape[1];
  }
  return b;
}

uint64_t bytes_of_step(const model::ModelConfig& config, uint64_t total,
                       std::vector<SequenceWork> batch) {
  return estimate_step_cost(config, total, 0, batch).weight_bytes_read;
}

class StepWeightBytes : public testing::TestWithParam<std::string> {};

TEST_P(StepWeightBytes, ReadOnlyTheGatheredEmbeddingRows) {
  const gguf::GgufFile file = gguf::GgufFile::open(kModels + GetParam() + ".gguf");
  const model::ModelConfig config = model::read_model_config(file);
  const FileBytes b = file_bytes(file);
  ASSERT_GT(b.token_embd, 0u);
  const bool tied = file.find_tensor("output.weight") == nullptr;
  // A decode step of 3 sequences and a prefill chunk of 7 tokens after 5 cached ones.
  for (const auto& batch : {std::vector<SequenceWork>{{1, 9, true}, {1, 4, true}, {1, 2, true}},
                            std::vector<SequenceWork>{{7, 5, false}}}) {
    uint64_t tokens = 0;
    for (const SequenceWork& s : batch) tokens += static_cast<uint64_t>(s.new_tokens);
    uint64_t expected = b.total;
    if (!tied) expected = expected - b.token_embd + tokens * (b.token_embd / b.token_embd_rows);
    if (b.position_embd > 0) {
      expected = expected - b.position_embd + tokens * (b.position_embd / b.position_embd_rows);
    }
    EXPECT_EQ(bytes_of_step(config, b.total, batch), expected) << tokens << " tokens";
  }
  EXPECT_EQ(bytes_of_step(config, b.total, {}), 0u);
}

INSTANTIATE_TEST_SUITE_P(TestModels, StepWeightBytes,
                         testing::Values("llama-f32", "llama-q4_0", "llama-tied-f32", "gpt2-f32",
                                         "gpt2-q8_0"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The bundled model (untied): a decode step no longer counts its 2.0 MB token_embd.
TEST(StepWeightBytes, BundledModelDecodeStep) {
  const gguf::GgufFile file = gguf::GgufFile::open(std::string(SERVESCOPE_TEST_DATA_DIR) +
                                                   "/../../assets/models/servescope-stories.gguf");
  const model::ModelConfig config = model::read_model_config(file);
  const FileBytes b = file_bytes(file);
  const uint64_t step = bytes_of_step(config, b.total, {{1, 10, true}});
  EXPECT_EQ(step, b.total - b.token_embd + b.token_embd / b.token_embd_rows);
  std::cout << "[ info ] bundled model: " << b.total << " weight bytes, token_embd " << b.token_embd
            << " (" << 100.0 * double(b.token_embd) / double(b.total) << "%); a decode step reads "
            << step << "\n";
}

}  // namespace
}  // namespace servescope::telemetry
