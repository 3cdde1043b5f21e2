// The CPU backend's threads split work, never a sum: a ragged batch (one sequence prefilling,
// others decoding, as the serving engine mixes them) gives bit-identical logits on 1, 2 and 3
// threads, and each decoding sequence gets what decoding it alone gives.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/model/model.h"

namespace servescope {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

// Four sequences in one paged cache: sequence s owns slots [s * 64, s * 64 + 64). Sequence 0
// prefills 9 tokens, sequences 1..3 first prefill 5 + s tokens, then decode one token together
// with sequence 0's prefill. Returns the last step's logits (every row of sequence 0, the last
// of the others).
std::vector<float> ragged_step(const std::string& name, int threads, bool quantised_activations,
                               int64_t only_sequence = -1) {
  compute::BackendChoice choice(compute::BackendKind::kCpu);
  choice.threads = threads;
  choice.quantised_activations = quantised_activations;
  auto m = model::load_model(kModels + name + ".gguf", choice);
  model::PagedKvCache cache =
      model::create_paged_kv_cache(m->config, *m->backend, gguf::GgmlType::F16, 256);
  std::vector<std::vector<int32_t>> slots(4, std::vector<int32_t>(64));
  std::vector<std::vector<int32_t>> tokens(4);
  for (int s = 0; s < 4; ++s) {
    std::iota(slots[s].begin(), slots[s].end(), s * 64);
    for (int t = 0; t < 6 + s; ++t) tokens[s].push_back((7 * s + 3 * t + 1) % 60 + 1);
  }
  std::vector<int32_t> prompt0 = {5, 9, 2, 33, 4, 17, 8, 21, 3};
  for (int s = 1; s < 4; ++s) {  // prompts of sequences 1..3 (all but their last token)
    if (only_sequence >= 0 && only_sequence != s) continue;
    const model::SequenceStep step{std::span(tokens[s]).first(tokens[s].size() - 1), 0, slots[s],
                                   model::LogitRows::kNone};
    m->transformer->forward_batch({&step, 1}, cache);
  }
  std::vector<model::SequenceStep> batch;
  if (only_sequence < 0) batch.push_back({prompt0, 0, slots[0], model::LogitRows::kAll});
  for (int s = 1; s < 4; ++s) {
    if (only_sequence >= 0 && only_sequence != s) continue;
    const auto last = static_cast<int64_t>(tokens[s].size()) - 1;
    batch.push_back({std::span(tokens[s]).subspan(static_cast<size_t>(last), 1), last, slots[s],
                     model::LogitRows::kLast});
  }
  return m->transformer->forward_batch(batch, cache);
}

class CpuThreadsModel : public testing::TestWithParam<std::string> {};

TEST_P(CpuThreadsModel, RaggedBatchIsBitIdenticalOnOneTwoThreeThreads) {
  for (const bool quantised : {false, true}) {
    const std::vector<float> one = ragged_step(GetParam(), 1, quantised);
    EXPECT_EQ(ragged_step(GetParam(), 2, quantised), one) << "quantised " << quantised;
    EXPECT_EQ(ragged_step(GetParam(), 3, quantised), one) << "quantised " << quantised;
  }
}

TEST_P(CpuThreadsModel, EachDecodingSequenceGetsWhatDecodingItAloneGives) {
  const std::vector<float> batched = ragged_step(GetParam(), 2, false);
  const size_t vocab = batched.size() / (9 + 3);
  for (int s = 1; s < 4; ++s) {
    const std::vector<float> alone = ragged_step(GetParam(), 2, false, s);
    const std::vector<float> in_batch(batched.begin() + static_cast<int64_t>((8 + s) * vocab),
                                      batched.begin() + static_cast<int64_t>((9 + s) * vocab));
    EXPECT_EQ(in_batch, alone) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuThreadsModel,
                         testing::Values("llama-f32", "llama-f16", "llama-q8_0", "llama-q4_0",
                                         "gpt2-q4_0"));

}  // namespace
}  // namespace servescope
