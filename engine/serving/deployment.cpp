#include "engine/serving/deployment.h"

#include <cmath>
#include <vector>

#include "engine/serving/kv_block_pool.h"
#include "engine/telemetry/step_cost.h"

namespace servescope::serving {

int64_t parameter_count(const model::ModelConfig& shape) {
  const int64_t norms = 2 * shape.dim;  // before attention and before the FFN
  const int64_t biases = shape.qkv_bias ? shape.n_heads * shape.head_dim + 2 * shape.kv_dim() : 0;
  const int64_t per_layer = telemetry::matmul_parameters_per_layer(shape) + norms + biases;
  const int64_t embeddings = shape.vocab_size * shape.dim * (shape.tied_output ? 1 : 2);
  return shape.n_layers * per_layer + embeddings + shape.dim;  // and the final norm
}

uint64_t stored_bytes(int64_t parameters, gguf::GgmlType type) {
  const int64_t elements = gguf::block_elements(type);
  const int64_t blocks = (parameters + elements - 1) / elements;
  return static_cast<uint64_t>(blocks * gguf::block_bytes(type));
}

namespace {

// The time in ms a step of `bytes` and `flops` takes at the device's roofs: the slower one.
double roofline_ms(uint64_t bytes, double flops, const DeviceSpec& device) {
  const double memory_ms = static_cast<double>(bytes) / (device.bandwidth_gb_per_s * 1e9) * 1e3;
  const double compute_ms = flops / (device.peak_tflop_per_s * 1e12) * 1e3;
  return std::max(memory_ms, compute_ms);
}

bool compute_bound(const telemetry::StepCost& cost, const DeviceSpec& device) {
  return cost.flops() / (device.peak_tflop_per_s * 1e12) >
         static_cast<double>(cost.bytes_moved()) / (device.bandwidth_gb_per_s * 1e9);
}

}  // namespace

DeploymentFigures deployment_figures(const model::ModelConfig& shape, gguf::GgmlType weights,
                                     gguf::GgmlType kv_type, const DeviceSpec& device,
                                     int64_t context_tokens) {
  model::ModelConfig config = shape;
  config.token_embd_row_bytes = stored_bytes(shape.dim, weights);  // a step gathers its rows
  DeploymentFigures f;
  f.parameters = parameter_count(shape);
  f.weight_bytes = stored_bytes(f.parameters, weights);
  f.kv_bytes_per_token = kv_bytes_per_token(kv_layout(config, kv_type));
  f.kv_bytes_per_request = f.kv_bytes_per_token * static_cast<uint64_t>(context_tokens);

  // Decoding: the newest token of a request whose cache holds the rest of the context.
  const auto decode_batch = [&](int64_t batch) {
    const std::vector<telemetry::SequenceWork> work(
        static_cast<size_t>(batch), telemetry::SequenceWork{1, context_tokens - 1, true});
    return telemetry::estimate_step_cost(config, f.weight_bytes, f.kv_bytes_per_token, work);
  };
  const telemetry::StepCost one = decode_batch(1);
  f.decode_bytes = one.bytes_moved();
  f.decode_flops = one.flops();
  f.decode_floor_ms = roofline_ms(f.decode_bytes, f.decode_flops, device);
  f.decode_compute_bound = compute_bound(one, device);
  f.ridge_flop_per_byte = device.peak_tflop_per_s * 1e12 / (device.bandwidth_gb_per_s * 1e9);
  // Doubling to the first compute-bound batch, then halving the gap back: the smallest one.
  if (compute_bound(decode_batch(kMaxBatchSearched), device)) {
    int64_t low = 0;  // memory-bound (0: by definition)
    int64_t high = kMaxBatchSearched;
    while (high - low > 1) {
      const int64_t mid = low + (high - low) / 2;
      (compute_bound(decode_batch(mid), device) ? high : low) = mid;
    }
    f.compute_bound_batch = high;
  }
  const double memory_bytes = device.memory_gb * 1e9;
  const double left = memory_bytes - static_cast<double>(f.weight_bytes);
  f.weights_fit = left >= 0.0;
  f.requests_that_fit =
      f.weights_fit && f.kv_bytes_per_request > 0
          ? static_cast<int64_t>(std::floor(left / static_cast<double>(f.kv_bytes_per_request)))
          : 0;
  return f;
}

}  // namespace servescope::serving
