// quantize_model against independent references: the test models that
// tools/golden/make_models.py quantised from the same float weights with numpy, and the
// edge-case blocks of tools/golden/make_quant_golden.py.
#include "engine/eval/quantize_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/core/error.h"

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
                                         Case{"gpt2", "q4_0"}, Case{"gpt2", "f16"}),
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
  EXPECT_THROW(parse_weight_type("q5_k"), InputError);
  EXPECT_THROW(llama_file_type(GgmlType::Q5_K), InputError);
}

}  // namespace
}  // namespace servescope::eval
