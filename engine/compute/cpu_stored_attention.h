// A decode row's attention over one KV head, reading the cached keys and values where they are
// stored (F32 or F16, through the sequence's slots) and converting them in registers. A decode
// step of a batch reads every sequence's private cache: gathering it into a float copy first
// wrote and read each element twice more than this does.
#pragma once

#include <cstdint>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// One KV head's cached rows of one sequence: row t is at base + slots[t] * row_bytes.
struct StoredHead {
  gguf::GgmlType type = gguf::GgmlType::F32;  // F32 or F16
  const uint8_t* keys = nullptr;              // the store's bytes, plus the head's offset
  const uint8_t* values = nullptr;
  uint64_t row_bytes = 0;  // one slot's row, all heads
  const int32_t* slots = nullptr;
  int64_t head_dim = 0;
};

// Whether this CPU has the kernels below for the head (AVX2 with F16C; F32 or F16; the head's
// size a whole number of 8-float vectors). Otherwise the caller gathers the rows into floats.
bool stored_attention_supported(gguf::GgmlType type, int64_t head_dim);

// scores[h * n_keys + t] = scale * (q_h . k_t) for the `group` query heads q_h (consecutive,
// head_dim apart) and keys t in [first, n_keys); other entries are left as they are.
void stored_key_scores(const StoredHead& head, const float* q, int group, int64_t first,
                       int64_t n_keys, float scale, float* scores);

// out_h = sum over t in [first, n_keys) of p[h * n_keys + t] * v_t for the `group` heads (out_h
// consecutive, head_dim apart; overwritten).
void stored_value_sum(const StoredHead& head, const float* p, int group, int64_t first,
                      int64_t n_keys, float* out);

}  // namespace servescope::compute
