// quantize_model against independent references: the test models that
// tools/golden/make_models.py quantised from the same float weights with numpy, and the
// edge-case blocks of tools/golden/make_quant_golden.py.
#include "engine/eval/quantize_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/eval/random_model.h"
#include "engine/model/model.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

gguf::GgufFile quantised(const gguf::GgufFile& source, GgmlType target) {
  return gguf::GgufFile::from_bytes(quantize_model(source, target).to_bytes(), "quantised");
}

// Every tensor equals the reference file's, byte for byte, with the same name, shape, type.
void expect_same_tensors(const gguf::GgufFile& ours, const gguf::GgufFile& reference) {
  ASSERT_EQ(ours.tensors().size(), reference.tensors().size());
  for (size_t i = 0; i < ours.tensors().size(); ++i) {
    const gguf::TensorInfo& a = ours.tensors()[i];
    const gguf::TensorInfo& b = reference.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape) << a.name;
    EXPECT_EQ(a.type, b.type) << a.name;
    ASSERT_EQ(a.n_bytes, b.n_bytes) << a.name;
    EXPECT_TRUE(std::equal(a.data, a.data + a.n_bytes, b.data)) << a.name << " bytes differ";
  }
}

// A key and value as GGUF bytes: Value has no operator==, its encoding is the comparison.
std::vector<uint8_t> encoded(const std::string& key, const gguf::Value& value) {
  gguf::GgufWriter writer;
  writer.set(key, value);
  return writer.to_bytes();
}

struct Case {
  std::string family;
  std::string type;
};

class QuantiseTestModel : public testing::TestWithParam<Case> {};

TEST_P(QuantiseTestModel, TensorBytesEqualThePythonQuantisation) {
  const Case& c = GetParam();
  const auto source = gguf::GgufFile::open(kData + "/models/" + c.family + "-f32.gguf");
  const auto reference =
      gguf::GgufFile::open(kData + "/models/" + c.family + "-" + c.type + ".gguf");
  expect_same_tensors(quantised(source, parse_weight_type(c.type)), reference);
}

TEST_P(QuantiseTestModel, MetadataCopiedWithTheNewFileType) {
  const Case& c = GetParam();
  const auto source = gguf::GgufFile::open(kData + "/models/" + c.family + "-f32.gguf");
  const auto reference =
      gguf::GgufFile::open(kData + "/models/" + c.family + "-" + c.type + ".gguf");
  const auto ours = quantised(source, parse_weight_type(c.type));
  // One key more: general.quantization_version, a uint32 2 as llama.cpp's quantize writes it.
  ASSERT_EQ(ours.metadata().size(), source.metadata().size() + 1);
  EXPECT_EQ(source.find("general.quantization_version"), nullptr);
  const gguf::Value* version = ours.find("general.quantization_version");
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->type(), gguf::ValueType::kUint32);
  EXPECT_EQ(version->as_int(), 2);
  for (size_t i = 0; i < source.metadata().size(); ++i) {
    const auto& [key, value] = ours.metadata()[i];
    EXPECT_EQ(key, source.metadata()[i].first);
    if (key == "general.file_type") {
      EXPECT_EQ(value.type(), gguf::ValueType::kUint32);
      EXPECT_EQ(value.as_int(), reference.find(key)->as_int());  // as make_models.py wrote it
    } else {
      EXPECT_EQ(encoded(key, value), encoded(key, source.metadata()[i].second)) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, QuantiseTestModel,
                         testing::Values(Case{"llama", "q8_0"}, Case{"llama", "q4_0"},
                                         Case{"llama", "f16"}, Case{"gpt2", "q8_0"},
                                         Case{"gpt2", "q4_0"}, Case{"gpt2", "f16"},
                                         Case{"llama", "q4_1"}, Case{"llama", "q5_0"},
                                         Case{"llama", "q5_1"}, Case{"llama", "bf16"}),
                         [](const auto& param_info) {
                           return param_info.param.family + "_" + param_info.param.type;
                         });

TEST(QuantiseEdgeCases, BlocksEqualTheNumpyReference) {
  const std::vector<uint8_t> raw = read_bytes(kData + "/quant/blocks.f32");
  std::vector<float> values(raw.size() / sizeof(float));
  std::memcpy(values.data(), raw.data(), raw.size());
  const auto n = static_cast<int64_t>(values.size());
  ASSERT_EQ(n % gguf::kQuantBlock, 0);
  for (const auto& [type, file] :
       {std::pair{GgmlType::Q8_0, "blocks.q8_0"}, std::pair{GgmlType::Q4_0, "blocks.q4_0"}}) {
    const std::vector<uint8_t> expected = read_bytes(kData + "/quant/" + file);
    std::vector<uint8_t> ours(gguf::row_bytes(type, n));
    gguf::quantize_row(type, values.data(), ours.data(), n);
    ASSERT_EQ(ours.size(), expected.size()) << file;
    const size_t block = static_cast<size_t>(gguf::block_bytes(type));
    for (size_t b = 0; b < ours.size() / block; ++b) {
      EXPECT_TRUE(std::equal(ours.begin() + b * block, ours.begin() + (b + 1) * block,
                             expected.begin() + b * block))
          << file << " block " << b;
    }
  }
}

TEST(QuantiseModel, OnlyWholeBlockMatricesTakeTheTarget) {
  const auto source = gguf::GgufFile::open(kData + "/models/gpt2-f32.gguf");
  const auto ours = quantised(source, GgmlType::Q4_0);
  for (const gguf::TensorInfo& t : ours.tensors()) {
    EXPECT_EQ(t.type, t.shape.size() == 2 ? GgmlType::Q4_0 : GgmlType::F32) << t.name;
  }
}

TEST(QuantiseModel, RefusesAnAlreadyQuantisedSource) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-q8_0.gguf");
  try {
    quantize_model(source, GgmlType::Q4_0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("already quantised"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Q8_0"), std::string::npos) << e.what();
  }
}

TEST(QuantiseModel, F16SourceQuantises) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f16.gguf");
  const auto ours = quantised(source, GgmlType::Q8_0);
  EXPECT_EQ(ours.find("general.file_type")->as_int(), 7);
  EXPECT_EQ(ours.find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
  EXPECT_EQ(ours.find_tensor("blk.0.attn_norm.weight")->type, GgmlType::F32);
}

TEST(QuantiseModel, ReportsProgressPerTensor) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  std::vector<std::string> names;
  int64_t last_done = 0;
  quantize_model(source, GgmlType::Q8_0, [&](int64_t done, int64_t total, const std::string& name) {
    EXPECT_EQ(done, last_done + 1);
    EXPECT_EQ(total, static_cast<int64_t>(source.tensors().size()));
    last_done = done;
    names.push_back(name);
  });
  ASSERT_EQ(names.size(), source.tensors().size());
  EXPECT_EQ(names.front(), source.tensors().front().name);
}

TEST(WeightTypes, ParseLabelAndFileType) {
  EXPECT_EQ(parse_weight_type("q8_0"), GgmlType::Q8_0);
  EXPECT_EQ(parse_weight_type("Q4_0"), GgmlType::Q4_0);
  EXPECT_EQ(parse_weight_type("F16"), GgmlType::F16);
  EXPECT_EQ(weight_type_label(GgmlType::Q4_0), "q4_0");
  EXPECT_EQ(llama_file_type(GgmlType::F32), 0u);
  EXPECT_EQ(llama_file_type(GgmlType::F16), 1u);
  EXPECT_EQ(llama_file_type(GgmlType::Q4_0), 2u);
  EXPECT_EQ(llama_file_type(GgmlType::Q8_0), 7u);
  EXPECT_EQ(parse_weight_type("q5_k"), GgmlType::Q5_K);
  EXPECT_EQ(weight_type_label(GgmlType::Q6_K), "q6_k");
  // llama.cpp's llama_ftype: a file of one K type is its "_S" mix, the mixes have their own.
  EXPECT_EQ(llama_file_type(GgmlType::Q4_1), 3u);
  EXPECT_EQ(llama_file_type(GgmlType::Q5_0), 8u);
  EXPECT_EQ(llama_file_type(GgmlType::Q5_1), 9u);
  EXPECT_EQ(llama_file_type(GgmlType::Q2_K), 10u);
  EXPECT_EQ(llama_file_type(GgmlType::Q3_K), 11u);
  EXPECT_EQ(llama_file_type(GgmlType::Q4_K), 14u);
  EXPECT_EQ(llama_file_type(GgmlType::Q5_K), 16u);
  EXPECT_EQ(llama_file_type(GgmlType::Q6_K), 18u);
  EXPECT_EQ(llama_file_type(GgmlType::BF16), 32u);
  EXPECT_EQ(scheme_file_type(parse_quantize_scheme("q4_k_m")), 15u);
  EXPECT_EQ(scheme_file_type(parse_quantize_scheme("Q5_K_M")), 17u);
  EXPECT_EQ(scheme_label(parse_quantize_scheme("q4_k_m")), "q4_k_m");
  EXPECT_EQ(parse_quantize_scheme("q4_k_m").type, GgmlType::Q4_K);
  EXPECT_EQ(parse_quantize_scheme("q6_k").recipe, QuantRecipe::kPure);
  EXPECT_THROW(parse_weight_type("q4_k_m"), InputError);  // a recipe, not one type
  EXPECT_THROW(parse_weight_type("iq4_xs"), InputError);
  EXPECT_THROW(parse_quantize_scheme("q3_k_m"), InputError);
  EXPECT_THROW(llama_file_type(GgmlType::Q8_K), InputError);
  EXPECT_THROW(parse_kv_type("q4_k"), InputError);  // the KV cache keeps its three types
}

// llama.cpp's use_more_bits on 32 layers: the first and last 4, and every third from layer 6.
TEST(QuantiseRecipes, UseMoreBitsLayers) {
  std::vector<int64_t> layers;
  for (int64_t i = 0; i < 32; ++i) {
    if (uses_more_bits(i, 32)) layers.push_back(i);
  }
  EXPECT_EQ(layers,
            (std::vector<int64_t>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
}

// A llama (random weights, the test models' vocabulary of 512) whose matrices have rows of 256,
// whole K-quant super-blocks, except ffn_down's rows of 32, which take the 32-block fallbacks
// as the bundled model's rows of 672 do.
gguf::GgufWriter k_source_writer() {
  const auto tokenizer = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  const RandomModelSpec spec{{256, 2, 4, 1, 32, 64}, GgmlType::F32, 11, "kquant"};
  return random_model_writer(spec, tokenizer);
}

const gguf::GgufFile& k_source() {
  static const gguf::GgufFile file =
      gguf::GgufFile::from_bytes(k_source_writer().to_bytes(), "kquant-f32");
  return file;
}

std::map<std::string, GgmlType> types_by_name(const gguf::GgufFile& source,
                                              const std::string& scheme) {
  const std::vector<GgmlType> types = tensor_types(source, parse_quantize_scheme(scheme));
  std::map<std::string, GgmlType> by_name;
  for (size_t i = 0; i < types.size(); ++i) by_name[source.tensors()[i].name] = types[i];
  return by_name;
}

TEST(QuantiseRecipes, Q4_K_MGivesOutputAndMoreBitsLayersQ6_K) {
  const auto types = types_by_name(k_source(), "q4_k_m");
  EXPECT_EQ(types.at("output.weight"), GgmlType::Q6_K);
  EXPECT_EQ(types.at("token_embd.weight"), GgmlType::Q4_K);
  EXPECT_EQ(types.at("blk.0.attn_q.weight"), GgmlType::Q4_K);
  EXPECT_EQ(types.at("blk.0.ffn_up.weight"), GgmlType::Q4_K);
  // Of 2 layers, use_more_bits picks layer 1 (>= 7/8 of the way).
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), GgmlType::Q4_K);
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), GgmlType::Q6_K);
  // ffn_down rows of 32: Q4_K falls back to Q5_0, Q6_K to Q8_0.
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), GgmlType::Q5_0);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), GgmlType::Q8_0);
  EXPECT_EQ(types.at("blk.0.attn_norm.weight"), GgmlType::F32);
  const auto q5 = types_by_name(k_source(), "q5_k_m");
  EXPECT_EQ(q5.at("blk.0.attn_q.weight"), GgmlType::Q5_K);
  EXPECT_EQ(q5.at("blk.1.attn_v.weight"), GgmlType::Q6_K);
  EXPECT_EQ(q5.at("blk.0.ffn_down.weight"), GgmlType::Q5_1);
  EXPECT_EQ(q5.at("output.weight"), GgmlType::Q6_K);
}

TEST(QuantiseRecipes, TiedEmbeddingIsTheOutputAndShortRowsFallBack) {
  // dim 64: no row is a whole super-block. The tied token embedding is quantised as the
  // output: Q8_0, as llama.cpp does when the rows are not whole blocks of the base type.
  const auto source = gguf::GgufFile::open(kData + "/models/llama-tied-f32.gguf");
  const auto types = types_by_name(source, "q4_k_m");
  EXPECT_EQ(types.at("token_embd.weight"), GgmlType::Q8_0);
  EXPECT_EQ(types.at("blk.0.attn_q.weight"), GgmlType::Q5_0);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), GgmlType::Q8_0);
  const auto pure = types_by_name(source, "q2_k");
  EXPECT_EQ(pure.at("token_embd.weight"), GgmlType::Q4_0);  // pure: no output rule
  EXPECT_EQ(pure.at("blk.0.attn_q.weight"), GgmlType::Q4_0);
}

std::vector<float> prompt_logits(const std::string& path) {
  auto m = model::load_model(path, compute::BackendKind::kCpu);
  auto cache = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const std::vector<int32_t> ids = {1, 17, 204, 33, 98, 401, 7, 250};
  return m->transformer->forward(ids, cache, true);
}

const std::vector<float>& f32_logits() {
  static const std::vector<float> logits = [] {
    const std::string path = ::testing::TempDir() + "/quantize_k_source_f32.gguf";
    k_source_writer().write(path);
    std::vector<float> values = prompt_logits(path);
    std::filesystem::remove(path);
    return values;
  }();
  return logits;
}

// The K source quantised by `scheme`: the file's tensor types as written, and the relative RMS
// difference of its prompt logits from the F32 model's. Computed once per scheme.
struct Quantised {
  std::vector<GgmlType> types;
  int64_t file_type = -1;
  double relative_error = 0.0;
};

const Quantised& quantised_k_source(const std::string& label) {
  static std::map<std::string, Quantised> done;
  if (const auto it = done.find(label); it != done.end()) return it->second;
  const std::string path = ::testing::TempDir() + "/quantize_k_source_" + label + ".gguf";
  quantize_model(k_source(), parse_quantize_scheme(label)).write(path);
  Quantised result;
  {
    const auto written = gguf::GgufFile::open(path);
    for (const gguf::TensorInfo& t : written.tensors()) result.types.push_back(t.type);
    result.file_type = written.find("general.file_type")->as_int();
  }
  const std::vector<float>& reference = f32_logits();
  const std::vector<float> ours = prompt_logits(path);
  std::filesystem::remove(path);
  EXPECT_EQ(ours.size(), reference.size());
  double diff = 0.0;
  double norm = 0.0;
  for (size_t i = 0; i < std::min(ours.size(), reference.size()); ++i) {
    diff += (ours[i] - reference[i]) * (ours[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  result.relative_error = std::sqrt(diff / norm);
  return done.emplace(label, std::move(result)).first->second;
}

// Each scheme writes the types tensor_types names and the file type llama.cpp would, and the
// logits stay near the F32 model's: a loose bound per scheme (about 1.5x the error measured on
// this random model, which amplifies weight noise through its layers; the orderings below
// compare the schemes with each other and with GGML's reference types).
struct LogitCase {
  std::string scheme;
  double max_relative_rms;
};

class QuantiseKSource : public testing::TestWithParam<LogitCase> {};

TEST_P(QuantiseKSource, TypesPerTensorAndLogitsNearF32) {
  const QuantizeScheme scheme = parse_quantize_scheme(GetParam().scheme);
  const Quantised& q = quantised_k_source(GetParam().scheme);
  EXPECT_EQ(q.types, tensor_types(k_source(), scheme));
  EXPECT_EQ(q.file_type, scheme_file_type(scheme));
  EXPECT_LT(q.relative_error, GetParam().max_relative_rms);
  EXPECT_GT(q.relative_error, 0.0);  // it did quantise
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantiseKSource,
                         testing::Values(LogitCase{"q2_k", 1.05}, LogitCase{"q3_k", 0.65},
                                         LogitCase{"q4_k", 0.3}, LogitCase{"q5_k", 0.17},
                                         LogitCase{"q6_k", 0.08}, LogitCase{"q4_k_m", 0.26},
                                         LogitCase{"q5_k_m", 0.16}),
                         [](const auto& param_info) { return param_info.param.scheme; });

// Against GGML's reference quantisers on the same model: a K-quant beats the legacy 32-block
// type of the same size (Q4_K and Q4_0 are both 4.5 bits per weight, Q5_K and Q5_0 5.5), the
// _M mixes beat their base type, and more bits give less error.
double error_of(const char* label) { return quantised_k_source(label).relative_error; }

TEST(QuantiseKSourceOrder, Q4_KBeatsQ4_0) { EXPECT_LT(error_of("q4_k"), error_of("q4_0")); }

TEST(QuantiseKSourceOrder, Q5_KBeatsQ5_0) { EXPECT_LT(error_of("q5_k"), error_of("q5_0")); }

TEST(QuantiseKSourceOrder, MixesBeatTheirBaseType) {
  EXPECT_LT(error_of("q4_k_m"), error_of("q4_k"));
  EXPECT_LT(error_of("q5_k_m"), error_of("q5_k"));
}

TEST(QuantiseKSourceOrder, MoreBitsLessError) {
  EXPECT_LT(error_of("q3_k"), error_of("q2_k"));
  EXPECT_LT(error_of("q4_k"), error_of("q3_k"));
  EXPECT_LT(error_of("q6_k"), error_of("q5_k"));
}

}  // namespace
}  // namespace servescope::eval
