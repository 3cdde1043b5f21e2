// Writes a few small valid GGUF files as the fuzzer's seed corpus: make_gguf_seeds DIR.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_writer.h"

using namespace servescope::gguf;

namespace {

std::vector<float> ramp(size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  return values;
}

GgufWriter metadata_only() {
  GgufWriter writer(2);
  writer.set("general.architecture", Value::str("llama"));
  writer.set("u8", Value::u8(1));
  writer.set("i16", Value::i16(-2));
  writer.set("f32", Value::f32(0.5f));
  writer.set("b", Value::boolean(true));
  writer.set("u64", Value::u64(7));
  writer.set("f64", Value::f64(1.5));
  writer.set("tokens", Value::array(ValueType::kString, {Value::str("a"), Value::str("<s>")}));
  writer.set("nested",
             Value::array(ValueType::kArray, {Value::array(ValueType::kInt32, {Value::i32(3)})}));
  return writer;
}

GgufWriter every_tensor_type() {
  GgufWriter writer(3);
  writer.set("general.alignment", Value::u32(16));
  writer.add_tensor_f32("f32", GgmlType::F32, {4, 2}, ramp(8));
  writer.add_tensor_f32("f16", GgmlType::F16, {3}, ramp(3));
  writer.add_tensor_f32("q8", GgmlType::Q8_0, {32, 2}, ramp(64));
  writer.add_tensor_f32("q4", GgmlType::Q4_0, {32}, ramp(32));
  return writer;
}

// One tensor of two blocks per type the reader loads, whichever types those are (the list grows
// with the library: Q4_1, Q5_0, Q5_1, BF16, the K-quants' 256-element super-blocks).
GgufWriter every_supported_type() {
  GgufWriter writer(3);
  for (uint32_t id = 0; id < 64; ++id) {
    const auto type = static_cast<GgmlType>(id);
    if (!servescope::gguf::is_supported(type)) continue;
    const int64_t block = servescope::gguf::block_elements(type);
    writer.add_tensor_f32("t" + std::to_string(id), type, {block, 2},
                          ramp(static_cast<size_t>(2 * block)));
  }
  return writer;
}

GgufWriter tiny_model() {
  GgufWriter writer(3);
  writer.set("general.architecture", Value::str("llama"));
  writer.set("llama.block_count", Value::u32(1));
  writer.set("llama.embedding_length", Value::u32(32));
  writer.add_tensor_f32("token_embd.weight", GgmlType::Q8_0, {32, 4}, ramp(128));
  writer.add_tensor_f32("blk.0.attn_norm.weight", GgmlType::F32, {32}, ramp(32));
  return writer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    metadata_only().write(dir / "metadata_only.gguf");
    every_tensor_type().write(dir / "every_tensor_type.gguf");
    every_supported_type().write(dir / "every_supported_type.gguf");
    tiny_model().write(dir / "tiny_model.gguf");
    GgufWriter().write(dir / "empty_v3.gguf");
  } catch (const servescope::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
