#include "engine/eval/kv_error.h"

#include <array>
#include <string>

#include "engine/core/error.h"

namespace servescope::eval {
namespace {

// The keys and values every layer caches after running ids through a fresh cache of `type`,
// dequantised: rows[side][layer][token * kv_dim + c], side 0 keys, 1 values.
using CachedRows = std::array<std::vector<std::vector<float>>, 2>;

CachedRows cached_rows(model::Transformer& transformer, std::span<const int32_t> ids,
                       gguf::GgmlType type) {
  transformer.set_kv_type(type);
  model::KvCache cache = transformer.new_cache(static_cast<int64_t>(ids.size()));
  transformer.forward(ids, cache);
  const int64_t kv_dim = transformer.config().kv_dim();
  const uint64_t stride = gguf::row_bytes(type, kv_dim);
  CachedRows rows;
  for (const compute::KvStore& store : cache.storage.layers) {
    for (const bool values : {false, true}) {
      const std::vector<uint8_t> bytes = transformer.backend().read_kv_bytes(store, values);
      std::vector<float> layer(ids.size() * static_cast<size_t>(kv_dim));
      for (size_t t = 0; t < ids.size(); ++t) {
        gguf::dequantize_row(type, bytes.data() + t * stride, layer.data() + t * kv_dim, kv_dim);
      }
      rows[values].push_back(std::move(layer));
    }
  }
  return rows;
}

// rows rounded to `type` as a cache of that type stores them, row by row.
std::vector<float> rounded(std::span<const float> rows, int64_t kv_dim, gguf::GgmlType type) {
  std::vector<uint8_t> row(gguf::row_bytes(type, kv_dim));
  std::vector<float> out(rows.size());
  for (size_t at = 0; at < rows.size(); at += static_cast<size_t>(kv_dim)) {
    gguf::quantize_row(type, rows.data() + at, row.data(), kv_dim);
    gguf::dequantize_row(type, row.data(), out.data() + at, kv_dim);
  }
  return out;
}

}  // namespace

KvErrorReport measure_kv_error(model::Transformer& transformer, std::span<const int32_t> ids,
                               gguf::GgmlType kv_type) {
  if (kv_type != gguf::GgmlType::F16 && kv_type != gguf::GgmlType::Q8_0) {
    throw InputError("KV error: compare F16 or Q8_0 against F32, not " +
                     std::string(gguf::type_name(kv_type)));
  }
  const model::ModelConfig& config = transformer.config();
  if (ids.empty()) throw InputError("KV error: the prompt has no tokens");
  if (static_cast<int64_t>(ids.size()) > config.context_length) {
    throw InputError("KV error: the prompt's " + std::to_string(ids.size()) +
                     " tokens exceed the model's context of " +
                     std::to_string(config.context_length));
  }
  const gguf::GgmlType previous = transformer.kv_type();
  KvErrorReport report{kv_type, static_cast<int64_t>(ids.size()), {}};
  CachedRows exact, stored;
  try {
    exact = cached_rows(transformer, ids, gguf::GgmlType::F32);
    stored = cached_rows(transformer, ids, kv_type);
  } catch (...) {
    transformer.set_kv_type(previous);
    throw;
  }
  transformer.set_kv_type(previous);

  const int64_t kv_dim = config.kv_dim();
  for (int64_t l = 0; l < config.n_layers; ++l) {
    const std::string prefix = "blk." + std::to_string(l) + ".";
    const auto i = static_cast<size_t>(l);
    KvLayerError layer{l, {}, {}, {}, {}};
    layer.keys = measure_tensor_error(prefix + "keys", kv_type, exact[0][i], stored[0][i]);
    layer.values = measure_tensor_error(prefix + "values", kv_type, exact[1][i], stored[1][i]);
    layer.keys_rounding_only = measure_tensor_error(prefix + "keys", kv_type, exact[0][i],
                                                    rounded(exact[0][i], kv_dim, kv_type));
    layer.values_rounding_only = measure_tensor_error(prefix + "values", kv_type, exact[1][i],
                                                      rounded(exact[1][i], kv_dim, kv_type));
    report.layers.push_back(std::move(layer));
  }
  return report;
}

}  // namespace servescope::eval
