// Random-weight models (make-model): shapes and sizes against the written file, the metadata
// flag, reproducibility by seed, the weights' scale, and that the model runs with finite logits.
#include "engine/eval/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/model/model.h"
#include "tests/compute/vulkan_test_support.h"
#include "tests/support/cli_runner.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;

const std::string kBundled =
    std::string(SERVESCOPE_TEST_DATA_DIR) + "/../../assets/models/servescope-stories.gguf";

const gguf::GgufFile& bundled() {
  static const gguf::GgufFile file = gguf::GgufFile::open(kBundled);
  return file;
}

RandomModelShape small_shape() { return {64, 2, 2, 1, 192, 64}; }

gguf::GgufFile make_in_memory(const RandomModelShape& shape, GgmlType type, uint64_t seed) {
  const RandomModelSpec spec{shape, type, seed, "test"};
  return gguf::GgufFile::from_bytes(random_model_writer(spec, bundled()).to_bytes(), "made");
}

// Mean and standard deviation of a tensor's decoded values.
std::pair<double, double> moments(const gguf::TensorInfo& tensor) {
  const std::vector<float> values = dequantize_tensor(tensor);
  const auto n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double square_sum = 0.0;
  for (const float v : values) square_sum += (v - mean) * (v - mean);
  return {mean, std::sqrt(square_sum / n)};
}

TEST(RandomModel, ParameterCountAndBytesMatchTheWrittenTensors) {
  const int64_t vocab = model::read_model_config(bundled()).vocab_size;
  for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    for (const RandomModelShape& shape : {small_shape(), RandomModelShape{96, 3, 3, 3, 160, 128},
                                          RandomModelShape{128, 1, 4, 2, 352, 256}}) {
      const gguf::GgufFile file = make_in_memory(shape, type, 7);
      const model::WeightSummary summary = model::summarize_weights(file);
      EXPECT_EQ(summary.parameters, parameter_count(shape, vocab)) << shape.dim;
      EXPECT_EQ(summary.bytes, random_model_weight_bytes(shape, vocab, type)) << shape.dim;
      EXPECT_EQ(file.tensors().size(), static_cast<size_t>(9 * shape.n_layers + 3));
    }
  }
}

// Each preset's parameter count is within 10% of its name, counted from a real file (the
// smallest) and from the formula checked above (all).
TEST(RandomModel, PresetsAreWithinTenPercentOfTheirNames) {
  const int64_t vocab = model::read_model_config(bundled()).vocab_size;
  for (const RandomModelPreset& preset : random_model_presets()) {
    const std::string name(preset.name);
    const double scale = name.back() == 'B' ? 1e9 : 1e6;
    const double target = std::stod(name.substr(0, name.size() - 1)) * scale;
    const double count = static_cast<double>(parameter_count(preset.shape, vocab));
    EXPECT_NEAR(count / target, 1.0, 0.10) << name;
    EXPECT_NO_THROW(validate_shape(preset.shape, GgmlType::Q4_0)) << name;
    EXPECT_GE(preset.shape.context_length, 256);
    EXPECT_LE(preset.shape.context_length, 2048);
  }
  const RandomModelShape smallest = random_model_preset("25M");
  const gguf::GgufFile file = make_in_memory(smallest, GgmlType::Q4_0, 1);
  EXPECT_NEAR(static_cast<double>(model::summarize_weights(file).parameters) / 25e6, 1.0, 0.10);
}

// A key and value as GGUF bytes: compares values of any type, arrays included.
std::vector<uint8_t> encoded(const std::string& key, const gguf::Value& value) {
  gguf::GgufWriter writer;
  writer.set(key, value);
  return writer.to_bytes();
}

TEST(RandomModel, MetadataMarksRandomWeightsAndCarriesTheTokenizer) {
  const gguf::GgufFile file = make_in_memory(small_shape(), GgmlType::Q8_0, 3);
  const model::ModelConfig config = model::read_model_config(file);
  EXPECT_TRUE(config.random_weights);
  EXPECT_NE(config.name.find(model::kRandomWeightsNote), std::string::npos) << config.name;
  EXPECT_EQ(config.dim, 64);
  EXPECT_EQ(config.n_layers, 2);
  EXPECT_EQ(config.n_heads, 2);
  EXPECT_EQ(config.n_kv_heads, 1);
  EXPECT_EQ(config.ffn_dim, 192);
  EXPECT_EQ(config.context_length, 64);
  EXPECT_FALSE(model::read_model_config(bundled()).random_weights);
  int copied = 0;
  for (const auto& [key, value] : bundled().metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    const gguf::Value* made = file.find(key);
    ASSERT_NE(made, nullptr) << key;
    EXPECT_EQ(encoded(key, *made), encoded(key, value)) << key;
    ++copied;
  }
  EXPECT_GT(copied, 3);
}

// Re-encoding keeps the mark: a quantised random model is still random.
TEST(RandomModel, QuantizingKeepsTheRandomWeightsFlag) {
  const gguf::GgufFile f32 = make_in_memory(small_shape(), GgmlType::F32, 3);
  const gguf::GgufFile q8 =
      gguf::GgufFile::from_bytes(quantize_model(f32, GgmlType::Q8_0).to_bytes(), "q8");
  EXPECT_TRUE(model::read_model_config(q8).random_weights);
}

TEST(RandomModel, SameSeedSameBytesOtherSeedOtherBytes) {
  const RandomModelSpec spec{small_shape(), GgmlType::Q4_0, 42, "test"};
  const std::vector<uint8_t> first = random_model_writer(spec, bundled()).to_bytes();
  EXPECT_EQ(first, random_model_writer(spec, bundled()).to_bytes());
  RandomModelSpec other = spec;
  other.seed = 43;
  const std::vector<uint8_t> second = random_model_writer(other, bundled()).to_bytes();
  ASSERT_EQ(first.size(), second.size());  // same layout ...
  EXPECT_NE(first, second);                // ... other values
}

TEST(RandomModel, WrittenFileEqualsTheInMemoryBytes) {
  const RandomModelSpec spec{small_shape(), GgmlType::F16, 5, "test"};
  const gguf::GgufWriter writer = random_model_writer(spec, bundled());
  const std::string path = testing_support::per_test_path("random_model_", ".gguf");
  writer.write(path);
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  EXPECT_EQ(file.file_size(), writer.to_bytes().size());
  const std::vector<uint8_t> expected = writer.to_bytes();
  std::FILE* in = std::fopen(path.c_str(), "rb");
  std::vector<uint8_t> actual(expected.size());
  ASSERT_EQ(std::fread(actual.data(), 1, actual.size(), in), actual.size());
  std::fclose(in);
  std::filesystem::remove(path);
  EXPECT_EQ(actual, expected);
}

// Matrices: mean 0 and standard deviation 1/sqrt(row length) within 3%; norm weights exactly 1.
TEST(RandomModel, WeightsHaveTheTargetScale) {
  for (const GgmlType type : {GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_0}) {
    const gguf::GgufFile file = make_in_memory({256, 1, 4, 2, 704, 64}, type, 9);
    for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight",
                             "blk.0.ffn_down.weight"}) {
      const gguf::TensorInfo& tensor = *file.find_tensor(name);
      const auto [mean, std] = moments(tensor);
      const double target = random_weight_std(tensor.shape[0]);
      // Q4_0's 16 levels add rounding noise of its own: about 9% of the variance.
      const double tolerance = type == GgmlType::Q4_0 ? 0.08 : 0.03;
      EXPECT_NEAR(std / target, 1.0, tolerance) << name << " " << gguf::type_name(type);
      EXPECT_NEAR(mean / target, 0.0, 0.02) << name;
    }
    const std::vector<float> norm = dequantize_tensor(*file.find_tensor("blk.0.ffn_norm.weight"));
    for (const float v : norm) ASSERT_EQ(v, 1.0f);
  }
}

TEST(RandomModel, RefusesShapesThatCannotBeBuilt) {
  const auto refuses = [](RandomModelShape shape, GgmlType type, const std::string& reason) {
    try {
      validate_shape(shape, type);
      ADD_FAILURE() << "accepted; expected: " << reason;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refuses({0, 2, 1, 1, 64, 64}, GgmlType::F32, "positive");
  refuses({96, 2, 5, 5, 64, 64}, GgmlType::F32, "multiple of heads");
  refuses({96, 2, 4, 3, 64, 64}, GgmlType::F32, "multiple of kv-heads");
  refuses({96, 2, 32, 32, 64, 64}, GgmlType::F32, "even");
  refuses({48, 2, 2, 2, 64, 64}, GgmlType::Q4_0, "multiples of 32");
  refuses({64, 2, 2, 2, 64, 8}, GgmlType::F32, "context length");
  EXPECT_THROW(random_model_preset("2B"), InputError);
}

// --vocab: the bundled tokenizer's tokens, then unused ones up to the size asked; the tokenizer
// still loads and encodes as the bundled one does, an unused token decodes to no text, and the
// embedding and output matrices have a row per token. Smaller than the tokenizer: refused.
TEST(RandomModel, PaddedVocabularyKeepsTheTokenizer) {
  RandomModelSpec spec{small_shape(), GgmlType::Q4_0, 3, "test"};
  spec.vocab_size = 3000;
  const std::string path = testing_support::per_test_path("random_model_vocab_", ".gguf");
  random_model_writer(spec, bundled()).write(path);
  const auto padded = model::load_model(path, compute::BackendKind::kCpu);
  const auto original = model::load_model(kBundled, compute::BackendKind::kCpu);
  EXPECT_EQ(padded->config.vocab_size, 3000);
  EXPECT_EQ(padded->require_tokenizer().size(), 3000);
  const std::string text = "Once upon a time, a little dog found 3 red balls!";
  EXPECT_EQ(padded->require_tokenizer().encode_with_bos(text),
            original->require_tokenizer().encode_with_bos(text));
  EXPECT_EQ(padded->require_tokenizer().piece(2999), "<unused_2999>");
  EXPECT_EQ(padded->require_tokenizer().token_bytes(2999), "");
  for (const char* name : {"token_embd.weight", "output.weight"}) {
    ASSERT_NE(padded->file.find_tensor(name), nullptr) << name;
    EXPECT_EQ(padded->file.find_tensor(name)->rows(), 3000) << name;
  }
  EXPECT_EQ(model::summarize_weights(padded->file).parameters, parameter_count(spec.shape, 3000));
  std::filesystem::remove(path);
  spec.vocab_size = 1000;
  EXPECT_THROW(random_model_writer(spec, bundled()), InputError);
}

// The made model runs: logits are finite and spread (not all equal) for every position, on the
// CPU and, where a device exists, on Vulkan, and the two backends agree.
std::vector<float> logits_of(const std::string& path, compute::BackendKind backend) {
  const auto m = model::load_model(path, backend);
  EXPECT_TRUE(m->config.random_weights);
  const std::vector<int32_t> ids = {1, 20, 300, 1999, 5, 6, 7, 8};
  model::KvCache cache = m->transformer->new_cache(static_cast<int64_t>(ids.size()));
  return m->transformer->forward(ids, cache, /*all_positions=*/true);
}

TEST(RandomModel, SmallModelRunsWithFiniteLogitsOnCpuAndVulkan) {
  const std::string path = testing_support::per_test_path("random_model_", ".gguf");
  random_model_writer({small_shape(), GgmlType::Q8_0, 11, "test"}, bundled()).write(path);
  const std::vector<float> cpu = logits_of(path, compute::BackendKind::kCpu);
  ASSERT_EQ(cpu.size(), size_t{8} * 2048);
  for (const float v : cpu) ASSERT_TRUE(std::isfinite(v));
  const auto [low, high] = std::minmax_element(cpu.begin(), cpu.end());
  EXPECT_GT(*high - *low, 1.0f);
  if (compute::vulkan::reason_to_skip_vulkan().empty()) {
    const std::vector<float> vulkan = logits_of(path, compute::BackendKind::kVulkan);
    ASSERT_EQ(vulkan.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(vulkan[i], cpu[i], 1e-2f) << i;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace servescope::eval
