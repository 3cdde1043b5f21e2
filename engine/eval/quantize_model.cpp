#include "engine/eval/quantize_model.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <thread>

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

// llama.cpp's llama_ftype numbers; a file of one K type is its "_S" (small) variant.
constexpr WeightTypeName kWeightTypes[] = {
    {GgmlType::F32, "f32", 0},    {GgmlType::F16, "f16", 1},    {GgmlType::BF16, "bf16", 32},
    {GgmlType::Q8_0, "q8_0", 7},  {GgmlType::Q4_0, "q4_0", 2},  {GgmlType::Q4_1, "q4_1", 3},
    {GgmlType::Q5_0, "q5_0", 8},  {GgmlType::Q5_1, "q5_1", 9},  {GgmlType::Q2_K, "q2_k", 10},
    {GgmlType::Q3_K, "q3_k", 11}, {GgmlType::Q4_K, "q4_k", 14}, {GgmlType::Q5_K, "q5_k", 16},
    {GgmlType::Q6_K, "q6_k", 18},
};

constexpr const char* kWeightTypeList =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k";

struct RecipeName {
  QuantRecipe recipe;
  const char* label;
  GgmlType base;
  uint32_t llama_file_type;
};

constexpr RecipeName kRecipes[] = {
    {QuantRecipe::kQ4_K_M, "q4_k_m", GgmlType::Q4_K, 15},
    {QuantRecipe::kQ5_K_M, "q5_k_m", GgmlType::Q5_K, 17},
};

const RecipeName& recipe_entry(QuantRecipe recipe) {
  for (const RecipeName& entry : kRecipes) {
    if (entry.recipe == recipe) return entry;
  }
  throw InputError("unknown quantisation recipe");
}

const WeightTypeName& weight_type_entry(GgmlType type) {
  for (const WeightTypeName& entry : kWeightTypes) {
    if (entry.type == type) return entry;
  }
  throw InputError("weight type " + std::string(gguf::type_name(type)) +
                   " cannot be a quantisation target; choose " + kWeightTypeList);
}

std::string lower_case(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
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

bool ends_with(const std::string& name, std::string_view suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama.cpp's tensor_type_fallback: a type whose blocks fit rows of `row_length`, or F32 when
// none does (llama.cpp stores those F16; F32 keeps the values exact).
GgmlType fit_rows(GgmlType wanted, int64_t row_length) {
  if (row_length % gguf::block_elements(wanted) == 0) return wanted;
  GgmlType fallback = GgmlType::F32;
  switch (wanted) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
      fallback = GgmlType::Q4_0;
      break;
    case GgmlType::Q4_K:
      fallback = GgmlType::Q5_0;
      break;
    case GgmlType::Q5_K:
      fallback = GgmlType::Q5_1;
      break;
    case GgmlType::Q6_K:
      fallback = GgmlType::Q8_0;
      break;
    default:
      break;
  }
  return row_length % gguf::block_elements(fallback) == 0 ? fallback : GgmlType::F32;
}

// The type a recipe gives a matrix before the row-length fallback. `index` / `count` number
// the tensors of its kind (attn_v, ffn_down) in file order, as llama.cpp counts them.
GgmlType recipe_type(const QuantizeScheme& scheme, const gguf::TensorInfo& tensor, bool is_output,
                     int64_t index, int64_t count) {
  if (scheme.recipe == QuantRecipe::kPure) return scheme.type;
  if (is_output) {
    // llama.cpp: Q8_0 when the rows are not whole blocks of the base type, else Q6_K.
    return tensor.shape[0] % gguf::block_elements(scheme.type) == 0 ? GgmlType::Q6_K
                                                                    : GgmlType::Q8_0;
  }
  if (ends_with(tensor.name, "attn_v.weight") || ends_with(tensor.name, "ffn_down.weight")) {
    return uses_more_bits(index, count) ? GgmlType::Q6_K : scheme.type;
  }
  if (ends_with(tensor.name, "attn_qkv.weight")) {
    return scheme.recipe == QuantRecipe::kQ4_K_M ? GgmlType::Q5_K : GgmlType::Q6_K;
  }
  return scheme.type;
}

// Encodes a matrix's rows on all cores: rows are independent, and the K-quants' search costs
// about 100 ns per weight on one core (a 1B-parameter model would take minutes). Each row's
// bytes are the same whatever the split.
std::vector<uint8_t> encode_rows(GgmlType type, const std::vector<float>& values,
                                 int64_t row_length) {
  const auto rows = static_cast<int64_t>(values.size()) / row_length;
  const auto bytes_per_row = static_cast<int64_t>(gguf::row_bytes(type, row_length));
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * bytes_per_row));
  constexpr int64_t kMinRowsPerThread = 64;
  const int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1,
                                              std::max<int64_t>(1, rows / kMinRowsPerThread));
  auto encode = [&](int64_t part) {
    const int64_t first = rows * part / threads;
    const int64_t last = rows * (part + 1) / threads;
    gguf::quantize_row(type, values.data() + first * row_length,
                       bytes.data() + first * bytes_per_row, (last - first) * row_length);
  };
  std::vector<std::thread> workers;
  for (int64_t part = 1; part < threads; ++part) workers.emplace_back(encode, part);
  encode(0);
  for (std::thread& worker : workers) worker.join();
  return bytes;
}

}  // namespace

GgmlType parse_weight_type(std::string_view name) {
  const std::string lower = lower_case(name);
  for (const WeightTypeName& entry : kWeightTypes) {
    if (lower == entry.label) return entry.type;
  }
  throw InputError("unknown weight type '" + std::string(name) + "'; choose one of " +
                   kWeightTypeList);
}

std::string weight_type_label(GgmlType type) { return weight_type_entry(type).label; }

GgmlType parse_kv_type(std::string_view name) {
  const std::string lower = lower_case(name);
  if (lower == "f32") return GgmlType::F32;
  if (lower == "f16") return GgmlType::F16;
  if (lower == "q8_0") return GgmlType::Q8_0;
  throw InputError("unknown KV cache type '" + std::string(name) +
                   "'; choose one of f32, f16, q8_0");
}

uint32_t llama_file_type(GgmlType type) { return weight_type_entry(type).llama_file_type; }

QuantizeScheme parse_quantize_scheme(std::string_view name) {
  const std::string lower = lower_case(name);
  for (const RecipeName& entry : kRecipes) {
    if (lower == entry.label) return {entry.base, entry.recipe};
  }
  for (const WeightTypeName& entry : kWeightTypes) {
    if (lower == entry.label) return {entry.type, QuantRecipe::kPure};
  }
  throw InputError("unknown quantisation type '" + std::string(name) + "'; choose one of " +
                   kWeightTypeList + ", q4_k_m, q5_k_m");
}

std::string scheme_label(const QuantizeScheme& scheme) {
  if (scheme.recipe == QuantRecipe::kPure) return weight_type_label(scheme.type);
  return recipe_entry(scheme.recipe).label;
}

uint32_t scheme_file_type(const QuantizeScheme& scheme) {
  if (scheme.recipe == QuantRecipe::kPure) return llama_file_type(scheme.type);
  return recipe_entry(scheme.recipe).llama_file_type;
}

bool uses_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool takes_target_type(const gguf::TensorInfo& tensor, GgmlType target) {
  return tensor.shape.size() == 2 && tensor.shape[0] % gguf::block_elements(target) == 0;
}

std::vector<GgmlType> tensor_types(const gguf::GgufFile& source, const QuantizeScheme& scheme) {
  weight_type_entry(scheme.type);  // rejects types that cannot be targets
  // llama.cpp quantises a tied token embedding as the output.
  const bool tied = source.find_tensor("output.weight") == nullptr;
  std::map<std::string, int64_t> counts;  // attn_v / ffn_down tensors in the file
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    for (const char* kind : {"attn_v.weight", "ffn_down.weight"}) {
      if (ends_with(tensor.name, kind)) ++counts[kind];
    }
  }
  std::map<std::string, int64_t> seen;
  std::vector<GgmlType> types;
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    if (tensor.shape.size() != 2) {
      types.push_back(GgmlType::F32);
      continue;
    }
    int64_t index = 0;
    int64_t count = 0;
    for (const char* kind : {"attn_v.weight", "ffn_down.weight"}) {
      if (ends_with(tensor.name, kind)) {
        index = seen[kind]++;
        count = counts[kind];
      }
    }
    const bool is_output =
        tensor.name == "output.weight" || (tied && tensor.name == "token_embd.weight");
    const GgmlType wanted = recipe_type(scheme, tensor, is_output, index, count);
    types.push_back(fit_rows(wanted, tensor.shape[0]));
  }
  return types;
}

std::vector<float> dequantize_tensor(const gguf::TensorInfo& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.n_elements()));
  gguf::dequantize_row(tensor.type, tensor.data, values.data(), tensor.n_elements());
  return values;
}

gguf::GgufWriter quantize_model(const gguf::GgufFile& source, const QuantizeScheme& scheme,
                                const QuantizeProgress& on_tensor) {
  const uint32_t file_type = scheme_file_type(scheme);  // also rejects unsupported targets
  check_not_quantised(source);
  const std::vector<GgmlType> types = tensor_types(source, scheme);

  gguf::GgufWriter writer(source.version());
  for (const auto& [key, value] : source.metadata()) writer.set(key, value);
  writer.set("general.file_type", gguf::Value::u32(file_type));
  writer.set(std::string(gguf::kQuantizationVersionKey),
             gguf::Value::u32(gguf::kQuantizationVersion));

  const auto total = static_cast<int64_t>(source.tensors().size());
  for (size_t i = 0; i < source.tensors().size(); ++i) {
    const gguf::TensorInfo& tensor = source.tensors()[i];
    const GgmlType type = types[i];
    if (type == tensor.type) {
      // Unchanged: copy the bytes instead of a round trip through float.
      writer.add_tensor(tensor.name, type, tensor.shape,
                        std::vector<uint8_t>(tensor.data, tensor.data + tensor.n_bytes));
    } else if (is_block_quantised(type)) {
      writer.add_tensor(tensor.name, type, tensor.shape,
                        encode_rows(type, dequantize_tensor(tensor), tensor.shape[0]));
    } else {
      writer.add_tensor_f32(tensor.name, type, tensor.shape, dequantize_tensor(tensor));
    }
    if (on_tensor) on_tensor(static_cast<int64_t>(i) + 1, total, tensor.name);
  }
  return writer;
}

gguf::GgufWriter quantize_model(const gguf::GgufFile& source, GgmlType target,
                                const QuantizeProgress& on_tensor) {
  return quantize_model(source, QuantizeScheme{target, QuantRecipe::kPure}, on_tensor);
}

}  // namespace servescope::eval
