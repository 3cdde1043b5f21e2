// The PyTorch attention probabilities of the golden test models
// (tools/golden/make_attention_golden.py), and a check of a transformer's captured attention
// weights against them: every layer, every head, every query position of the golden prompt.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace servescope::testing_support {

// [layer][head][query position] -> weights over positions 0 ..= query position
using AttentionLayers = std::vector<std::vector<std::vector<std::vector<float>>>>;

struct AttentionGolden {
  std::vector<int32_t> prompt_ids;
  std::map<gguf::GgmlType, AttentionLayers> kv_types;  // keys and values rounded to the type
};

inline AttentionGolden read_attention_golden(const std::string& models_dir,
                                             const std::string& name) {
  std::ifstream in(models_dir + name + ".attention.json");
  const auto doc = nlohmann::json::parse(in);
  AttentionGolden golden{doc["prompt_ids"].get<std::vector<int32_t>>(), {}};
  for (const auto& [label, type] :
       {std::pair{"f32", gguf::GgmlType::F32}, std::pair{"f16", gguf::GgmlType::F16},
        std::pair{"q8_0", gguf::GgmlType::Q8_0}}) {
    golden.kv_types[type] = doc["kv_types"][label].get<AttentionLayers>();
  }
  return golden;
}

// Runs the golden prompt through m (KV cache of its transformer's KV type) with every layer
// and head captured and compares with PyTorch's probabilities for that KV type; returns the
// largest difference seen.
inline float expect_attention_matches_golden(model::Model& m, const AttentionGolden& golden,
                                             float tolerance) {
  const AttentionLayers& layers = golden.kv_types.at(m.transformer->kv_type());
  m.transformer->set_attention_capture(model::AttentionCapture{});
  model::KvCache cache = m.transformer->new_cache(m.config.context_length);
  m.transformer->forward(golden.prompt_ids, cache);
  const auto& captured = m.transformer->captured_attention();
  EXPECT_EQ(captured.size(), static_cast<size_t>(m.config.n_layers * m.config.n_heads));
  float worst = 0.0f;
  for (const model::AttentionWeights& w : captured) {
    const auto& expected = layers.at(static_cast<size_t>(w.layer)).at(static_cast<size_t>(w.head));
    EXPECT_EQ(w.rows.size(), expected.size());
    for (size_t i = 0; i < std::min(w.rows.size(), expected.size()); ++i) {
      EXPECT_EQ(w.positions[i], static_cast<int32_t>(i));
      EXPECT_EQ(w.rows[i].size(), expected[i].size()) << "layer " << w.layer << " head " << w.head;
      if (w.rows[i].size() != expected[i].size()) continue;
      for (size_t t = 0; t < expected[i].size(); ++t) {
        const float difference = std::abs(w.rows[i][t] - expected[i][t]);
        worst = std::max(worst, difference);
        EXPECT_LE(difference, tolerance)
            << "layer " << w.layer << " head " << w.head << " query " << i << " key " << t;
      }
    }
  }
  m.transformer->set_attention_capture(std::nullopt);
  return worst;
}

}  // namespace servescope::testing_support
