#include "engine/eval/quantize_model.h"

#include <algorithm>
#include <cctype>

#include "engine/core/error.h"
#include "engine/gguf/gguf_format.h"

namespace servescope::eval {

using gguf::GgmlType;

namespace {

struct WeightTypeName {
  GgmlType type;
  const char* label;
  uint32_t llama_file_type;
};

constexpr WeightTypeName kWeightTypes[] = {
    {GgmlType::F32, "f32", 0},
    {GgmlType::F16, "f16", 1},
    {GgmlType::Q8_0, "q8_0", 7},
    {GgmlType::Q4_0, "q4_0", 2},
};

const WeightTypeName& weight_type_entry(GgmlType type) {
  for (const WeightTypeName& entry : kWeightTypes) {
    if (entry.type == type) return entry;
  }
  throw InputError("weight type " + std::string(gguf::type_name(type)) +
                   " cannot be a quantisation target; choose f32, f16, q8_0 or q4_0");
}

bool is_block_quantised(GgmlType type) { return gguf::block_elements(type) > 1; }

// Refuses sources that are already block-quantised (see quantize_model's comment).
void check_not_quantised(const gguf::GgufFile& source) {
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    if (is_block_quantised(tensor.type)) {
      throw InputError(source.name() + " is already quantised: tensor " + tensor.name + " is " +
                       std::string(gguf::type_name(tensor.type)) +
                       "; quantise from the F32 or F16 file instead (quantising twice adds a "
                       "second rounding error)");
    }
  }
}

}  // namespace

GgmlType parse_weight_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const WeightTypeName& entry : kWeightTypes) {
    if (lower == entry.label) return entry.type;
  }
  throw InputError("unknown weight type '" + std::string(name) +
                   "'; choose one of f32, f16, q8_0, q4_0");
}

std::string weight_type_label(GgmlType type) { return weight_type_entry(type).label; }

GgmlType parse_kv_type(std::string_view name) {
  const GgmlType type = [&] {
    try {
      return parse_weight_type(name);
    } catch (const InputError&) {
      return GgmlType::Q4_0;  // refused below with the KV cache's own list
    }
  }();
  if (type == GgmlType::Q4_0) {
    throw InputError("unknown KV cache type '" + std::string(name) +
                     "'; choose one of f32, f16, q8_0");
  }
  return type;
}

uint32_t llama_file_type(GgmlType type) { return weight_type_entry(type).llama_file_type; }

bool takes_target_type(const gguf::TensorInfo& tensor, GgmlType target) {
  return tensor.shape.size() == 2 && tensor.shape[0] % gguf::block_elements(target) == 0;
}

std::vector<float> dequantize_tensor(const gguf::TensorInfo& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.n_elements()));
  gguf::dequantize_row(tensor.type, tensor.data, values.data(), tensor.n_elements());
  return values;
}

gguf::GgufWriter quantize_model(const gguf::GgufFile& source, GgmlType target,
                                const QuantizeProgress& on_tensor) {
  const uint32_t file_type = llama_file_type(target);  // also rejects unsupported targets
  check_not_quantised(source);

  gguf::GgufWriter writer(source.version());
  for (const auto& [key, value] : source.metadata()) writer.set(key, value);
  writer.set("general.file_type", gguf::Value::u32(file_type));
  writer.set(std::string(gguf::kQuantizationVersionKey),
             gguf::Value::u32(gguf::kQuantizationVersion));

  const auto total = static_cast<int64_t>(source.tensors().size());
  int64_t done = 0;
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    const GgmlType type = takes_target_type(tensor, target) ? target : GgmlType::F32;
    if (type == tensor.type) {
      // Unchanged: copy the bytes instead of a round trip through float.
      writer.add_tensor(tensor.name, type, tensor.shape,
                        std::vector<uint8_t>(tensor.data, tensor.data + tensor.n_bytes));
    } else {
      writer.add_tensor_f32(tensor.name, type, tensor.shape, dequantize_tensor(tensor));
    }
    if (on_tensor) on_tensor(++done, total, tensor.name);
  }
  return writer;
}

}  // namespace servescope::eval
