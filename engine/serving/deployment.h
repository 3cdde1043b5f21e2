// "Here and there": the engine's own formulas (telemetry/step_cost.h, the KV pool's layout)
// applied to a published model shape on a device known by its datasheet, so the physics
// measured on this machine can be read on real deployments. Nothing here is measured: the
// figures follow from the shape, the number format and the device's memory, bandwidth and
// peak arithmetic rate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/gguf/ggml_types.h"
#include "engine/model/model_config.h"

namespace servescope::serving {

// A device as a datasheet (or this machine's probe) gives it.
struct DeviceSpec {
  std::string name;
  double memory_gb = 0.0;           // 10^9 bytes
  double bandwidth_gb_per_s = 0.0;  // 10^9 bytes per second
  double peak_tflop_per_s = 0.0;    // 10^12 FLOP per second, the rate the weights' math runs at
  std::string source;               // where the figures come from
};

// The weights' parameters counted from the shape: every attention and FFN matrix, the norms,
// the q/k/v biases where the architecture has them, the embedding table and (untied) the
// output projection.
int64_t parameter_count(const model::ModelConfig& shape);

// Bytes of `parameters` numbers stored as `type` (whole blocks: 34 bytes per 32 for Q8_0).
uint64_t stored_bytes(int64_t parameters, gguf::GgmlType type);

struct DeploymentFigures {
  int64_t parameters = 0;
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;    // all layers' keys and values of one token
  uint64_t kv_bytes_per_request = 0;  // at the context length asked about
  // One decode step of one request at the context: its bytes (weights read once, its KV read
  // and the new token's written) and FLOPs, and the time the slower of the two takes on the
  // device: no decode step can be faster.
  uint64_t decode_bytes = 0;
  double decode_flops = 0.0;
  double decode_floor_ms = 0.0;
  bool decode_compute_bound = false;
  double ridge_flop_per_byte = 0.0;  // peak FLOP/s over bandwidth
  // The smallest decode batch (every request at the context) whose FLOPs take longer than its
  // bytes; none when none up to kMaxBatchSearched does (the KV reads grow with the batch).
  std::optional<int64_t> compute_bound_batch;
  // Requests whose KV caches at the context fit beside the weights (working memory not
  // counted); negative memory left means the weights alone do not fit.
  int64_t requests_that_fit = 0;
  bool weights_fit = false;
};

inline constexpr int64_t kMaxBatchSearched = 1 << 16;

DeploymentFigures deployment_figures(const model::ModelConfig& shape, gguf::GgmlType weights,
                                     gguf::GgmlType kv_type, const DeviceSpec& device,
                                     int64_t context_tokens);

}  // namespace servescope::serving
