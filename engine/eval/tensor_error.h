// How far quantised weights are from the originals: per tensor and per layer, as plain data
// for the quantisation panel and the quant-report.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/eval/quantize_model.h"
#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_file.h"

namespace servescope::eval {

// Counts of the error e = quantised - original in fixed bins. With edges b[0] < ... < b[n-1],
// counts has n + 1 entries: counts[0] is e < b[0], counts[i] is b[i-1] <= e < b[i], and
// counts[n] is e >= b[n-1].
struct ErrorHistogram {
  std::vector<double> edges;
  std::vector<int64_t> counts;
};

// The default edges: symmetric half-decades +-{1e-5, 3e-5, 1e-4, ..., 3e-2, 1e-1}, 18 edges,
// 19 bins. Fixed (not scaled per tensor) so histograms of different tensors and types compare
// directly; the middle bin [-1e-5, 1e-5) holds exact values, the outer ones anything >= 0.1.
const std::vector<double>& default_error_bin_edges();

struct TensorError {
  std::string name;
  gguf::GgmlType type = gguf::GgmlType::F32;  // the quantised tensor's type
  int64_t elements = 0;
  double sum_squared_original = 0.0;  // sum x^2
  double sum_squared_error = 0.0;     // sum (q - x)^2
  double rmse = 0.0;                  // sqrt(sum (q - x)^2 / n)
  double max_abs_error = 0.0;         // max |q - x|
  double relative_error = 0.0;        // ||q - x|| / ||x||; 0 when both are 0, +inf if only x is 0
  double sqnr_db = 0.0;               // 10 log10(sum x^2 / sum (q - x)^2); +inf when exact
  ErrorHistogram histogram;
};

// Errors of `quantised` against `original` (same length; InputError otherwise). Sums in double.
TensorError measure_tensor_error(std::string name, gguf::GgmlType type,
                                 std::span<const float> original, std::span<const float> quantised,
                                 const std::vector<double>& bin_edges = default_error_bin_edges());

// The tensors of one layer ("blk.3") or of everything outside the layers ("other"), pooled:
// the sums are added, so rmse / relative_error / sqnr_db describe all their elements together.
struct LayerError {
  std::string layer;
  int64_t tensors = 0;
  int64_t elements = 0;
  double rmse = 0.0;
  double max_abs_error = 0.0;
  double relative_error = 0.0;
  double sqnr_db = 0.0;
};

// "blk.12.attn_q.weight" -> "blk.12"; names outside the layers -> "other".
std::string layer_of(const std::string& tensor_name);

// One entry per layer in order blk.0, blk.1, ..., then "other" if any.
std::vector<LayerError> summarize_by_layer(const std::vector<TensorError>& tensors);

// Every tensor of `source` quantised in memory as quantize_model would store it for `target`,
// dequantised and compared with the source values.
std::vector<TensorError> measure_quantisation_error(
    const gguf::GgufFile& source, gguf::GgmlType target,
    const std::vector<double>& bin_edges = default_error_bin_edges());
// The same for a scheme: every tensor in the type quantize_model gives it (tensor_types).
std::vector<TensorError> measure_quantisation_error(
    const gguf::GgufFile& source, const QuantizeScheme& scheme,
    const std::vector<double>& bin_edges = default_error_bin_edges());

}  // namespace servescope::eval
