// Each generator's answer against the formula computed here from the model's configuration,
// and against figures checked by hand for the bundled model (its model card:
// assets/models/README.md: 5 layers, 2 KV heads of 64, 4,614,912 parameters, all F32).
#include "app/lessons/generators.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "app/lessons/model_facts.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"

namespace servescope::lessons {
namespace {

const std::filesystem::path kModels = std::filesystem::path(SERVESCOPE_TEST_DATA_DIR) / "models";

const ModelFacts& bundled() {
  static const ModelFacts facts = model_facts(std::filesystem::path(SERVESCOPE_BUNDLED_MODEL));
  return facts;
}

// Bytes per element of the KV cache, written out: 4, 2, and Q8_0's 34 bytes per 32 elements.
double kv_element_bytes(const std::string& type) {
  if (type == "f32") return 4.0;
  if (type == "f16") return 2.0;
  return 34.0 / 32.0;
}

double kv_bytes_by_hand(const model::ModelConfig& c, int64_t tokens, const std::string& type) {
  return static_cast<double>(tokens) * static_cast<double>(c.n_layers) * 2.0 *
         static_cast<double>(c.n_kv_heads) * static_cast<double>(c.head_dim) *
         kv_element_bytes(type);
}

TEST(ModelFacts, ReadTheBundledModelsConfiguration) {
  const ModelFacts& m = bundled();
  EXPECT_EQ(m.config.n_layers, 5);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  EXPECT_EQ(m.config.head_dim, 64);
  EXPECT_EQ(m.parameters, 4'614'912);
  EXPECT_EQ(m.weight_bytes, 4'614'912u * 4u);
  EXPECT_EQ(m.weight_type, "f32");
  EXPECT_FALSE(m.name.empty());
}

TEST(Generators, KvBytesIsTokensTimesTwoLayersKvHeadsHeadDimAndElementBytes) {
  const ModelFacts& m = bundled();
  for (const std::string type : {"f32", "f16", "q8_0"}) {
    for (const int64_t tokens : {1, 200, 256, 1000}) {
      const GeneratedAnswer a =
          generate_answer("kv_bytes", {{"tokens", std::to_string(tokens)}, {"kv_type", type}}, m);
      EXPECT_DOUBLE_EQ(a.value, kv_bytes_by_hand(m.config, tokens, type)) << type << " " << tokens;
      EXPECT_EQ(a.unit, "bytes");
    }
  }
  // By hand: 2 x 5 x 2 x 64 = 1,280 elements per token; Q8_0 stores 40 blocks of 34 bytes.
  const GeneratedAnswer q8 =
      generate_answer("kv_bytes", {{"tokens", "200"}, {"kv_type", "q8_0"}}, m);
  EXPECT_DOUBLE_EQ(q8.calc.at("bytes_per_token"), 1360);
  EXPECT_DOUBLE_EQ(q8.calc.at("kv_dim"), 128);
  EXPECT_DOUBLE_EQ(q8.calc.at("row_bytes"), 136);
  EXPECT_DOUBLE_EQ(q8.value, 272'000);
  EXPECT_EQ(q8.params.at("tokens"), "200");
}

TEST(Generators, KvBytesFollowEachTestModelsOwnShape) {
  for (const char* name : {"llama-f32.gguf", "gpt2-f32.gguf", "llama-tied-f32.gguf"}) {
    const ModelFacts m = model_facts(kModels / name);
    for (const std::string type : {"f32", "f16"}) {
      const GeneratedAnswer a =
          generate_answer("kv_bytes", {{"tokens", "37"}, {"kv_type", type}}, m);
      EXPECT_DOUBLE_EQ(a.value, kv_bytes_by_hand(m.config, 37, type)) << name << " " << type;
    }
  }
}

TEST(Generators, KvAllocatedBytesRoundsUpToWholeBlocks) {
  const ModelFacts& m = bundled();
  for (const int64_t block : {1, 16, 32}) {
    for (const int64_t tokens : {1, 16, 17, 200}) {
      const GeneratedAnswer a = generate_answer("kv_allocated_bytes",
                                                {{"tokens", std::to_string(tokens)},
                                                 {"kv_type", "f16"},
                                                 {"block_size", std::to_string(block)}},
                                                m);
      const int64_t blocks = (tokens + block - 1) / block;
      EXPECT_DOUBLE_EQ(a.value, kv_bytes_by_hand(m.config, blocks * block, "f16"));
      EXPECT_DOUBLE_EQ(a.calc.at("blocks"), static_cast<double>(blocks));
    }
  }
  // Default block size 16: 200 tokens take 13 blocks = 208 token slots of 1,360 bytes.
  const GeneratedAnswer a =
      generate_answer("kv_allocated_bytes", {{"tokens", "200"}, {"kv_type", "q8_0"}}, m);
  EXPECT_DOUBLE_EQ(a.value, 282'880);
  EXPECT_EQ(a.params.at("block_size"), "16");
}

// Matrices whose rows are whole 32-element blocks take the type; 1-D tensors stay F32.
double weight_bytes_by_hand(const gguf::GgufFile& file, const std::string& type) {
  double bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const auto n = static_cast<double>(t.n_elements());
    const bool takes = t.shape.size() == 2 && t.shape[0] % 32 == 0;
    if (!takes || type == "f32") {
      bytes += 4 * n;
    } else if (type == "f16") {
      bytes += 2 * n;
    } else if (type == "q8_0") {
      bytes += n / 32 * 34;
    } else {
      bytes += n / 32 * 18;
    }
  }
  return bytes;
}

TEST(Generators, WeightBytesReencodesEveryMatrix) {
  const auto file = gguf::GgufFile::open(SERVESCOPE_BUNDLED_MODEL);
  const ModelFacts& m = bundled();
  for (const std::string type : {"f32", "f16", "q8_0", "q4_0"}) {
    const GeneratedAnswer a = generate_answer("weight_bytes", {{"type", type}}, m);
    EXPECT_DOUBLE_EQ(a.value, weight_bytes_by_hand(file, type)) << type;
  }
  // By hand: 2,816 norm elements stay F32; 4,612,096 matrix elements in 144,128 blocks.
  EXPECT_DOUBLE_EQ(generate_answer("weight_bytes", {{"type", "q8_0"}}, m).value,
                   144'128.0 * 34 + 2'816.0 * 4);
}

TEST(Generators, WeightBytesMatchTheQuantisedTestModelsOnDisk) {
  const ModelFacts f32 = model_facts(kModels / "llama-f32.gguf");
  for (const std::string type : {"f16", "q8_0", "q4_0"}) {
    const auto file = gguf::GgufFile::open(kModels / ("llama-" + type + ".gguf"));
    const ModelFacts quantised = model_facts(file);
    EXPECT_EQ(quantised.weight_type, type);
    EXPECT_EQ(generate_answer("weight_bytes", {{"type", type}}, f32).value,
              static_cast<double>(model::summarize_weights(file).bytes))
        << type;
  }
}

TEST(Generators, DecodeFloorIsWeightBytesOverBandwidth) {
  const ModelFacts& m = bundled();
  const GeneratedAnswer a = generate_answer("decode_floor_ms", {{"bandwidth_gbs", "10"}}, m);
  EXPECT_DOUBLE_EQ(a.value, 18'459'648.0 / 10e9 * 1000);  // 1.85 ms per token at 10 GB/s
  const GeneratedAnswer q4 =
      generate_answer("decode_floor_ms", {{"bandwidth_gbs", "20"}, {"type", "q4_0"}}, m);
  EXPECT_DOUBLE_EQ(
      q4.value,
      weight_bytes_by_hand(gguf::GgufFile::open(SERVESCOPE_BUNDLED_MODEL), "q4_0") / 20e9 * 1000);
}

TEST(Generators, DecodeFloorUsesTheMeasuredRoofWhenAsked) {
  const ModelFacts& m = bundled();
  const GeneratedAnswer a = generate_answer("decode_floor_ms", {{"bandwidth_gbs", "measured"}}, m,
                                            {{"working_set_roof_gbs", 12.5}});
  EXPECT_DOUBLE_EQ(a.value, 18'459'648.0 / 12.5e9 * 1000);
  EXPECT_EQ(a.params.at("bandwidth_gbs"), "12.5");
  EXPECT_THROW(generate_answer("decode_floor_ms", {{"bandwidth_gbs", "measured"}}, m), InputError);
}

TEST(Generators, MaxBatchIsFreeMemoryOverEachRequestsBlocks) {
  const ModelFacts& m = bundled();
  const GeneratedAnswer a = generate_answer(
      "max_batch", {{"memory_mib", "64"}, {"context", "256"}, {"kv_type", "f16"}}, m);
  // (64 MiB - 18,459,648 bytes of weights) / (16 blocks x 16 tokens x 2,560 bytes) = 74.2
  EXPECT_DOUBLE_EQ(a.value, 74);
  EXPECT_DOUBLE_EQ(a.calc.at("per_request_bytes"), 655'360);
  EXPECT_THAT(
      [&] {
        generate_answer("max_batch", {{"memory_mib", "8"}, {"context", "256"}, {"kv_type", "f16"}},
                        m);
      },
      testing::ThrowsMessage<InputError>(testing::HasSubstr("does not even hold the weights")));
}

TEST(Generators, RefuseBadParametersWithTheirName) {
  const ModelFacts& m = bundled();
  const auto message = [&](const std::string& generator,
                           const std::map<std::string, std::string>& params) {
    try {
      generate_answer(generator, params, m);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("kv_bytez", {}), testing::HasSubstr("unknown generator 'kv_bytez'"));
  EXPECT_THAT(message("kv_bytes", {{"tokens", "200"}}),
              testing::HasSubstr("needs the parameter kv_type"));
  EXPECT_THAT(message("kv_bytes", {{"tokens", "lots"}, {"kv_type", "f16"}}),
              testing::HasSubstr("whole number"));
  EXPECT_THAT(message("kv_bytes", {{"tokens", "0"}, {"kv_type", "f16"}}),
              testing::HasSubstr("outside"));
  EXPECT_THAT(message("kv_bytes", {{"tokens", "2"}, {"kv_type", "q4_0"}}),
              testing::HasSubstr("not one of f32, f16 or q8_0"));
  EXPECT_THAT(message("kv_bytes", {{"tokens", "2"}, {"kv_type", "f16"}, {"colour", "red"}}),
              testing::HasSubstr("no parameter 'colour'"));
}

}  // namespace
}  // namespace servescope::lessons
