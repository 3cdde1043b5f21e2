#include "engine/eval/tensor_error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"

namespace servescope::eval {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double relative_error_of(double sum_squared_error, double sum_squared_original) {
  if (sum_squared_error == 0.0) return 0.0;
  if (sum_squared_original == 0.0) return kInfinity;
  return std::sqrt(sum_squared_error / sum_squared_original);
}

double sqnr_db_of(double sum_squared_error, double sum_squared_original) {
  if (sum_squared_error == 0.0) return kInfinity;
  return 10.0 * std::log10(sum_squared_original / sum_squared_error);
}

size_t bin_index(const std::vector<double>& edges, double error) {
  return static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), error) - edges.begin());
}

// Encodes and decodes values as `type` would store them.
std::vector<float> round_trip(gguf::GgmlType type, std::span<const float> values) {
  const auto n = static_cast<int64_t>(values.size());
  std::vector<uint8_t> encoded(gguf::row_bytes(type, n));
  gguf::quantize_row(type, values.data(), encoded.data(), n);
  std::vector<float> decoded(values.size());
  gguf::dequantize_row(type, encoded.data(), decoded.data(), n);
  return decoded;
}

}  // namespace

const std::vector<double>& default_error_bin_edges() {
  static const std::vector<double> edges = [] {
    const double magnitudes[] = {1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5};
    std::vector<double> e;
    for (const double m : magnitudes) e.push_back(-m);
    for (auto it = std::rbegin(magnitudes); it != std::rend(magnitudes); ++it) e.push_back(*it);
    return e;
  }();
  return edges;
}

TensorError measure_tensor_error(std::string name, gguf::GgmlType type,
                                 std::span<const float> original, std::span<const float> quantised,
                                 const std::vector<double>& bin_edges) {
  if (original.size() != quantised.size()) {
    throw InputError("tensor " + name + ": " + std::to_string(original.size()) +
                     " original values but " + std::to_string(quantised.size()) +
                     " quantised ones");
  }
  TensorError e;
  e.name = std::move(name);
  e.type = type;
  e.elements = static_cast<int64_t>(original.size());
  e.histogram.edges = bin_edges;
  e.histogram.counts.assign(bin_edges.size() + 1, 0);
  for (size_t i = 0; i < original.size(); ++i) {
    const double x = original[i];
    const double error = static_cast<double>(quantised[i]) - x;
    e.sum_squared_original += x * x;
    e.sum_squared_error += error * error;
    e.max_abs_error = std::max(e.max_abs_error, std::abs(error));
    ++e.histogram.counts[bin_index(bin_edges, error)];
  }
  e.rmse = e.elements > 0 ? std::sqrt(e.sum_squared_error / static_cast<double>(e.elements)) : 0.0;
  e.relative_error = relative_error_of(e.sum_squared_error, e.sum_squared_original);
  e.sqnr_db = sqnr_db_of(e.sum_squared_error, e.sum_squared_original);
  return e;
}

std::string layer_of(const std::string& tensor_name) {
  constexpr std::string_view prefix = "blk.";
  if (tensor_name.rfind(prefix, 0) != 0) return "other";
  const size_t dot = tensor_name.find('.', prefix.size());
  if (dot == prefix.size() || dot == std::string::npos) return "other";
  const std::string number = tensor_name.substr(prefix.size(), dot - prefix.size());
  if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "other";
  }
  return tensor_name.substr(0, dot);
}

std::vector<LayerError> summarize_by_layer(const std::vector<TensorError>& tensors) {
  struct Pool {
    LayerError summary;
    double sum_squared_original = 0.0;
    double sum_squared_error = 0.0;
  };
  // Keyed by layer number so blk.10 follows blk.9; "other" sorts last.
  std::map<int64_t, Pool> pools;
  for (const TensorError& t : tensors) {
    const std::string layer = layer_of(t.name);
    const int64_t key =
        layer == "other" ? std::numeric_limits<int64_t>::max() : std::stoll(layer.substr(4));
    Pool& pool = pools[key];
    pool.summary.layer = layer;
    ++pool.summary.tensors;
    pool.summary.elements += t.elements;
    pool.summary.max_abs_error = std::max(pool.summary.max_abs_error, t.max_abs_error);
    pool.sum_squared_original += t.sum_squared_original;
    pool.sum_squared_error += t.sum_squared_error;
  }
  std::vector<LayerError> out;
  for (auto& [key, pool] : pools) {
    LayerError& s = pool.summary;
    s.rmse =
        s.elements > 0 ? std::sqrt(pool.sum_squared_error / static_cast<double>(s.elements)) : 0.0;
    s.relative_error = relative_error_of(pool.sum_squared_error, pool.sum_squared_original);
    s.sqnr_db = sqnr_db_of(pool.sum_squared_error, pool.sum_squared_original);
    out.push_back(s);
  }
  return out;
}

std::vector<TensorError> measure_quantisation_error(const gguf::GgufFile& source,
                                                    gguf::GgmlType target,
                                                    const std::vector<double>& bin_edges) {
  return measure_quantisation_error(source, QuantizeScheme{target, QuantRecipe::kPure}, bin_edges);
}

std::vector<TensorError> measure_quantisation_error(const gguf::GgufFile& source,
                                                    const QuantizeScheme& scheme,
                                                    const std::vector<double>& bin_edges) {
  std::vector<TensorError> out;
  const std::vector<gguf::GgmlType> types = tensor_types(source, scheme);
  for (size_t i = 0; i < source.tensors().size(); ++i) {
    const gguf::TensorInfo& tensor = source.tensors()[i];
    const gguf::GgmlType type = types[i];
    const std::vector<float> original = dequantize_tensor(tensor);
    const std::vector<float> quantised = round_trip(type, original);
    out.push_back(measure_tensor_error(tensor.name, type, original, quantised, bin_edges));
  }
  return out;
}

}  // namespace servescope::eval
