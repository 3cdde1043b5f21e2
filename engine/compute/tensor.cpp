#include <cassert>
#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/compute/backend.h"
#include "engine/core/error.h"

namespace servescope::compute {

Tensor Tensor::columns(int64_t first, int64_t count) const {
  assert(first >= 0 && first + count <= cols);
  Tensor view = *this;
  view.offset = offset + first;
  view.cols = count;
  return view;
}

Tensor Tensor::row_range(int64_t first, int64_t count) const {
  assert(first >= 0 && first + count <= rows);
  Tensor view = *this;
  view.offset = offset + first * row_stride;
  view.rows = count;
  return view;
}

float AttentionShape::score_scale() const {
  return scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

double RopeSpec::angle(int64_t position, int64_t pair, int64_t head_dim) const {
  const double factor =
      freq_factors.empty() ? 1.0 : double(freq_factors[static_cast<size_t>(pair)]);
  return double(position) * double(freq_scale) *
         std::pow(double(freq_base), -2.0 * double(pair) / double(head_dim)) / factor;
}

void check_kv_store_shape(gguf::GgmlType type, int64_t slots, int64_t kv_dim) {
  using gguf::GgmlType;
  if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::Q8_0) {
    throw InputError("KV cache type " + std::string(gguf::type_name(type)) +
                     " is not supported; choose one of: f32, f16, q8_0");
  }
  if (slots < 1 || kv_dim < 1) throw InputError("a KV store needs at least one slot and column");
  if (type == GgmlType::Q8_0 && kv_dim % gguf::kQuantBlock != 0) {
    throw InputError("a Q8_0 KV cache needs rows of a multiple of 32 elements, not " +
                     std::to_string(kv_dim));
  }
}

void check_kv_slot_copy(const KvStore& store, int32_t from, int32_t to, int32_t count) {
  const auto inside = [&](int64_t first) {
    return first >= 0 && count >= 0 && first + count <= store.slots;
  };
  if (!inside(from) || !inside(to)) {
    throw InputError("KV copy of " + std::to_string(count) + " slots from " +
                     std::to_string(from) + " to " + std::to_string(to) +
                     " is outside the store (0.." + std::to_string(store.slots - 1) + ")");
  }
  if (count > 0 && std::abs(int64_t{from} - int64_t{to}) < count) {
    throw InputError("KV copy: the source and destination slots overlap");
  }
}

}  // namespace servescope::compute
