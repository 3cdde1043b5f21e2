// Models that cannot run give a ModelError naming the file and what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "tests/gguf/gguf_test_util.h"

namespace servescope {
namespace {

using gguf::Value;

// A tiny but complete llama model (dim 32, one layer), so each test can break one thing.
// attn_k and ffn_up are stored as `odd_type`; the weights are exact in F16. With another
// `arch`, the same tensors under that architecture's keys (to break what it adds).
gguf::GgufWriter tiny_llama(gguf::GgmlType odd_type = gguf::GgmlType::F32,
                            const std::string& arch = "llama") {
  gguf::GgufWriter w;
  w.set("general.architecture", Value::str(arch));
  w.set(arch + ".context_length", Value::u32(16));
  w.set(arch + ".embedding_length", Value::u32(32));
  w.set(arch + ".block_count", Value::u32(1));
  w.set(arch + ".feed_forward_length", Value::u32(64));
  w.set(arch + ".attention.head_count", Value::u32(4));
  w.set(arch + ".attention.head_count_kv", Value::u32(2));
  const auto matrix = [&](const std::string& name, int64_t rows, int64_t cols,
                          gguf::GgmlType type = gguf::GgmlType::F32) {
    std::vector<float> values(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>(int(i % 17) - 8) / 256;
    }
    w.add_tensor_f32(name, type, {cols, rows}, values);
  };
  const auto vector = [&](const std::string& name, int64_t n) {
    std::vector<float> values(static_cast<size_t>(n), 1.0f);
    w.add_tensor_f32(name, gguf::GgmlType::F32, {n}, values);
  };
  matrix("token_embd.weight", 8, 32);
  vector("blk.0.attn_norm.weight", 32);
  matrix("blk.0.attn_q.weight", 32, 32);
  matrix("blk.0.attn_k.weight", 16, 32, odd_type);
  matrix("blk.0.attn_v.weight", 16, 32);
  matrix("blk.0.attn_output.weight", 32, 32);
  vector("blk.0.ffn_norm.weight", 32);
  matrix("blk.0.ffn_gate.weight", 64, 32);
  matrix("blk.0.ffn_up.weight", 64, 32, odd_type);
  matrix("blk.0.ffn_down.weight", 32, 64);
  vector("output_norm.weight", 32);
  return w;
}

std::string load_error(const gguf::GgufWriter& writer, ModelError::Kind expected_kind) {
  // One file per test: ctest runs tests as parallel processes.
  const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto path = testing::TempDir() + "/model_errors_" + test + ".gguf";
  writer.write(path);
  try {
    model::load_model(path, compute::BackendKind::kCpu);
  } catch (const ModelError& e) {
    EXPECT_EQ(e.kind(), expected_kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a ModelError";
  return "";
}

TEST(ModelErrors, TinyModelLoadsAndRuns) {
  const auto path = testing::TempDir() + "/tiny." + std::to_string(getpid()) + ".gguf";
  tiny_llama().write(path);
  auto m = model::load_model(path, compute::BackendKind::kCpu);
  EXPECT_TRUE(m->config.tied_output);
  auto cache = model::create_kv_cache(m->config, *m->backend, 16);
  EXPECT_EQ(m->transformer->forward(std::vector<int32_t>{1, 2, 3}, cache).size(), 8u);
}

// q, k and v (gate and up) of different types cannot share one matrix: each run of one type
// gets its own product, into its columns of the fused output. Same results as one type.
TEST(ModelErrors, ProjectionsOfMixedTypesRunPartByPart) {
  std::vector<std::vector<float>> logits;
  for (const gguf::GgmlType odd_type : {gguf::GgmlType::F32, gguf::GgmlType::F16}) {
    const auto path = testing::TempDir() + "/tiny_" + std::string(gguf::type_name(odd_type)) + "." +
                      std::to_string(getpid()) + ".gguf";
    tiny_llama(odd_type).write(path);
    auto m = model::load_model(path, compute::BackendKind::kCpu);
    auto cache = model::create_kv_cache(m->config, *m->backend, 16);
    logits.push_back(m->transformer->forward(std::vector<int32_t>{1, 2, 3}, cache, true));
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  for (size_t i = 0; i < logits[0].size(); ++i) EXPECT_NEAR(logits[0][i], logits[1][i], 1e-5f);
}

TEST(ModelErrors, UnsupportedArchitectureIsNamed) {
  auto w = tiny_llama();
  w.set("general.architecture", Value::str("mamba"));
  const std::string message = load_error(w, ModelError::Kind::kUnsupportedArchitecture);
  EXPECT_NE(message.find("architecture 'mamba' is not supported; supported: llama, gpt2, qwen2, "
                         "phi3, gemma, gemma2, gemma3"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
}

// A metadata value ServeScope cannot run is one line naming the key, the value and what is
// supported.
TEST(ModelErrors, UnsupportedRopeScalingIsNamed) {
  auto w = tiny_llama();
  w.set("llama.rope.scaling.type", Value::str("yarn"));
  const std::string message = load_error(w, ModelError::Kind::kUnsupportedArchitecture);
  EXPECT_NE(message.find("llama.rope.scaling.type 'yarn' is not supported; supported: none, "
                         "linear"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
}

TEST(ModelErrors, Phi3LongContextRopeFactorsAreRefused) {
  auto w = tiny_llama(gguf::GgmlType::F32, "phi3");
  w.add_tensor_f32("rope_factors_long.weight", gguf::GgmlType::F32, {4},
                   std::vector<float>{1.0f, 1.0f, 2.0f, 4.0f});
  const std::string message = load_error(w, ModelError::Kind::kUnsupportedArchitecture);
  EXPECT_NE(message.find("rope_factors_long/short) are not supported"), std::string::npos)
      << message;
}

// What an architecture adds must be there: qwen2's biases, gemma3's per-head norms.
TEST(ModelErrors, MissingArchitectureTensorsAreNamed) {
  EXPECT_NE(load_error(tiny_llama(gguf::GgmlType::F32, "qwen2"), ModelError::Kind::kMissingTensor)
                .find("tensor blk.0.attn_q.bias is missing"),
            std::string::npos);
  EXPECT_NE(load_error(tiny_llama(gguf::GgmlType::F32, "gemma3"), ModelError::Kind::kMissingTensor)
                .find("tensor blk.0.attn_q_norm.weight is missing"),
            std::string::npos);
}

TEST(ModelErrors, NonPositiveRopeFrequencyFactorsAreRefused) {
  auto w = tiny_llama();
  w.add_tensor_f32("rope_freqs.weight", gguf::GgmlType::F32, {4},
                   std::vector<float>{1.0f, 0.0f, 2.0f, 4.0f});
  EXPECT_NE(load_error(w, ModelError::Kind::kBadShape).find("rope_freqs.weight holds 0"),
            std::string::npos);
}

TEST(ModelErrors, MissingMetadataNamesTheKey) {
  auto w = tiny_llama();
  w.set("llama.block_count", Value::str("one"));
  EXPECT_NE(load_error(w, ModelError::Kind::kMissingMetadata).find("llama.block_count"),
            std::string::npos);
}

// A value of the wrong type names its key, not only "expected string, found uint32".
TEST(ModelErrors, WrongTypedMetadataNamesTheKey) {
  auto w = tiny_llama();
  w.set("general.name", Value::u32(7));
  EXPECT_NE(load_error(w, ModelError::Kind::kMissingMetadata)
                .find("metadata key general.name must be a string, but is uint32"),
            std::string::npos);
  auto arch = tiny_llama();
  arch.set("general.architecture", Value::u32(1));
  EXPECT_NE(load_error(arch, ModelError::Kind::kMissingMetadata)
                .find("metadata key general.architecture must be a string, but is uint32"),
            std::string::npos);
}

// A tensor the file holds (sparsely: a hole costs no disk) but no memory could: refused by name
// and size before it is copied, not as "std::bad_alloc". The file is written by hand, since the
// writer would write every byte: the header, then a hole up to twice the machine's memory.
TEST(ModelErrors, TensorLargerThanMemoryIsNamedWithItsSize) {
  const uint64_t memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  constexpr uint64_t kDim = 4096;
  const uint64_t vocab = 2 * memory / (kDim * sizeof(float)) + 1;
  gguf::testing::RawBytes raw;
  raw.header(3, 1, 7);
  raw.str("general.architecture").u32(8).str("llama");
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, uint32_t>>{{"llama.context_length", 16},
                                                     {"llama.embedding_length", kDim},
                                                     {"llama.block_count", 1},
                                                     {"llama.feed_forward_length", 64},
                                                     {"llama.attention.head_count", 32},
                                                     {"llama.attention.head_count_kv", 32}}) {
    raw.str(key).u32(4).u32(value);
  }
  raw.str("token_embd.weight").u32(2).u64(kDim).u64(vocab).u32(0).u64(0);  // F32 at offset 0
  raw.pad_to(32);
  const uint64_t tensor_bytes = kDim * vocab * sizeof(float);
  const auto path = testing::TempDir() + "/huge." + std::to_string(getpid()) + ".gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(raw.bytes.data()),
              static_cast<std::streamsize>(raw.bytes.size()));
  }
  std::filesystem::resize_file(path, raw.bytes.size() + tensor_bytes);
  try {
    model::load_model(path, compute::BackendKind::kCpu);
    ADD_FAILURE() << "expected a ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor token_embd.weight needs " +
                                         std::to_string(tensor_bytes) + " bytes, more than the"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(ModelErrors, MissingTensorIsNamed) {
  auto w = tiny_llama();
  w.set("llama.block_count", Value::u32(2));  // blk.1.* does not exist
  EXPECT_NE(load_error(w, ModelError::Kind::kMissingTensor).find("blk.1.attn_norm.weight"),
            std::string::npos);
}

TEST(ModelErrors, WrongShapeIsNamed) {
  auto w = tiny_llama();
  w.set("llama.attention.head_count_kv", Value::u32(4));  // attn_k should now be 32 wide
  const std::string message = load_error(w, ModelError::Kind::kBadShape);
  EXPECT_NE(message.find("blk.0.attn_k.weight has shape [32 x 16]"), std::string::npos) << message;
}

TEST(ModelErrors, BadInputTokensAndLengthAreInputErrors) {
  const auto path = testing::TempDir() + "/tiny_input." + std::to_string(getpid()) + ".gguf";
  tiny_llama().write(path);
  auto m = model::load_model(path, compute::BackendKind::kCpu);
  auto cache = model::create_kv_cache(m->config, *m->backend, 16);
  EXPECT_THROW(m->transformer->forward(std::vector<int32_t>{1, 8}, cache), InputError);
  EXPECT_THROW(m->transformer->forward(std::vector<int32_t>(17, 1), cache), InputError);
  EXPECT_EQ(cache.length, 0);  // a rejected call leaves the cache as it was
}

}  // namespace
}  // namespace servescope
