#include "app/gui/quant_lab.h"

#include <cmath>

#include "engine/eval/kv_error.h"
#include "engine/eval/variant_model.h"
#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope::gui {
namespace {

constexpr gguf::GgmlType kWeightType = gguf::GgmlType::Q4_0;
constexpr gguf::GgmlType kKvType = gguf::GgmlType::Q8_0;
constexpr int64_t kContinuationTokens = 24;

// The tensor the histogram shows: the first layer's feed-forward down projection when there is
// one (a large matrix every architecture has), else the largest tensor.
const eval::TensorError& chosen_tensor(const std::vector<eval::TensorError>& errors) {
  const eval::TensorError* largest = &errors.front();
  for (const eval::TensorError& e : errors) {
    if (e.name == "blk.0.ffn_down.weight") return e;
    if (e.elements > largest->elements) largest = &e;
  }
  return *largest;
}

std::vector<int32_t> continue_greedily(model::Transformer& transformer,
                                       const std::vector<int32_t>& prompt) {
  serving::EngineRequest request;
  request.prompt_ids = prompt;
  request.max_tokens = kContinuationTokens;
  return serving::generate(transformer, request).generated_ids;
}

}  // namespace

QuantLabReport run_quant_lab(const std::string& model_path, const Tokenizer& tokenizer,
                             const std::string& prompt, const std::string& text) {
  QuantLabReport lab;
  lab.model_path = model_path;
  lab.prompt = prompt;
  const auto attempt = [&lab](const std::string& part, const auto& measure) {
    try {
      measure();
    } catch (const std::exception& error) {
      lab.problems.push_back(part + ": " + error.what());
    }
  };
  const gguf::GgufFile file = gguf::GgufFile::open(model_path);
  const std::vector<int32_t> prompt_ids = tokenizer.encode_with_bos(prompt);

  attempt("weight error", [&] {
    const std::vector<eval::TensorError> errors =
        eval::measure_quantisation_error(file, kWeightType);
    if (!errors.empty()) lab.tensor = chosen_tensor(errors);
    lab.weight_layers = eval::summarize_by_layer(errors);
  });
  attempt("variants", [&] {
    eval::QuantReportOptions options;
    options.types = {gguf::GgmlType::F16, gguf::GgmlType::Q8_0, kWeightType};  // against F32
    options.text_ids = tokenizer.encode(text);
    options.bos_id = tokenizer.vocabulary().bos_id;
    options.max_chunks = 1;
    options.timing_repeats = 2;
    options.greedy_tokens = 16;
    lab.report = eval::run_quant_report(file, options);
  });
  attempt("KV cache error", [&] {
    const auto m =
        model::load_model(model_path, compute::BackendChoice(compute::BackendKind::kCpu));
    for (const eval::KvLayerError& layer :
         eval::measure_kv_error(*m->transformer, prompt_ids, kKvType).layers) {
      const double signal = layer.keys.sum_squared_original + layer.values.sum_squared_original;
      const double noise = layer.keys.sum_squared_error + layer.values.sum_squared_error;
      lab.kv_layers.push_back(
          {layer.layer, noise > 0.0 ? 10.0 * std::log10(signal / noise) : INFINITY});
    }
    lab.baseline_ids = continue_greedily(*m->transformer, prompt_ids);
  });
  attempt("quantised continuation", [&] {
    const auto variant =
        eval::load_quantised_variant(file, kWeightType, compute::BackendKind::kCpu);
    lab.variant_ids = continue_greedily(*variant->transformer, prompt_ids);
  });
  return lab;
}

}  // namespace servescope::gui
