#include "app/gui/engine_bridge/quant_lab.h"

#include <algorithm>
#include <cmath>

#include "app/cli/command_support.h"
#include "app/gui/panels/quant_block.h"
#include "engine/eval/kv_error.h"
#include "engine/eval/quantize_model.h"
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

// Keys and values together: their summed signal over their summed error, in dB.
double sqnr_db(const eval::TensorError& keys, const eval::TensorError& values) {
  const double signal = keys.sum_squared_original + values.sum_squared_original;
  const double noise = keys.sum_squared_error + values.sum_squared_error;
  return noise > 0.0 ? 10.0 * std::log10(signal / noise) : INFINITY;
}

std::vector<int32_t> continue_greedily(model::Transformer& transformer,
                                       const std::vector<int32_t>& prompt) {
  serving::EngineRequest request;
  request.prompt_ids = prompt;
  request.max_tokens = kContinuationTokens;
  return serving::generate(transformer, request).generated_ids;
}

// The comparison's shape: quant-report's fixed load and timing rounds on a shorter text than
// the command line's default, so a learner waits seconds, not minutes. The rounds stay: a
// timed run is tens of milliseconds, and with two a burst of other work on the machine
// decided the speed-ups (Q8_0's decode measured 0.41x to 3.6x of F32 in one session).
eval::QuantReportOptions lab_options(const Tokenizer& tokenizer, const std::string& text,
                                     const std::vector<std::string>& types) {
  eval::QuantReportOptions options;
  options.types.clear();
  for (const std::string& type : types) options.types.push_back(eval::parse_quantize_scheme(type));
  options.text_ids = tokenizer.encode(text);
  options.bos_id = tokenizer.vocabulary().bos_id;
  options.max_chunks = 1;
  options.greedy_tokens = 16;
  return options;
}

}  // namespace

std::vector<std::string> lab_type_choices() {
  std::vector<gguf::GgmlType> types = eval::quantisation_targets();
  std::erase(types, gguf::GgmlType::F32);
  // From the most bits per weight to the fewest, as a learner reads a precision ladder.
  const auto bits = [](gguf::GgmlType t) {
    return static_cast<double>(gguf::block_bytes(t)) / static_cast<double>(gguf::block_elements(t));
  };
  std::stable_sort(types.begin(), types.end(),
                   [&](gguf::GgmlType a, gguf::GgmlType b) { return bits(a) > bits(b); });
  std::vector<std::string> choices;
  for (const gguf::GgmlType type : types) choices.push_back(eval::weight_type_label(type));
  // A mixed recipe beside its base type (q4_k_m after q4_k).
  for (const eval::QuantizeScheme& scheme : eval::quantisation_schemes()) {
    if (scheme.recipe == eval::QuantRecipe::kPure) continue;
    const auto base =
        std::find(choices.begin(), choices.end(), eval::weight_type_label(scheme.type));
    choices.insert(base == choices.end() ? base : base + 1, eval::scheme_label(scheme));
  }
  return choices;
}

std::vector<std::string> default_lab_types() {
  std::vector<std::string> chosen;
  const std::vector<std::string> offered = lab_type_choices();
  // High, middle and low precision: what 16, 8 and 4 bits cost and buy.
  for (const char* type : {"f16", "q8_0", "q4_k_m", "q4_0"}) {
    if (std::find(offered.begin(), offered.end(), type) != offered.end()) chosen.push_back(type);
  }
  return chosen;
}

QuantLabReport run_quant_lab(const std::string& model_path, const Tokenizer& tokenizer,
                             const std::string& prompt, const std::string& text,
                             const std::vector<std::string>& types,
                             const QuantLabControl& control) {
  QuantLabReport lab;
  lab.model_path = model_path;
  lab.prompt = prompt;
  lab.types = types;
  const auto attempt = [&lab](const std::string& part, const auto& measure) {
    try {
      measure();
    } catch (const eval::ReportCancelled&) {
      throw;  // the caller's stop, not a problem of the model
    } catch (const std::exception& error) {
      lab.problems.push_back(part + ": " + error.what());
    }
  };
  const gguf::GgufFile file = gguf::GgufFile::open(model_path);
  const std::vector<int32_t> prompt_ids = tokenizer.encode_with_bos(prompt);
  attempt("block pictures", [&] { lab.blocks = quant_blocks(file); });

  attempt("weight error", [&] {
    const std::vector<eval::TensorError> errors =
        eval::measure_quantisation_error(file, kWeightType);
    if (!errors.empty()) lab.tensor = chosen_tensor(errors);
    lab.weight_layers = eval::summarize_by_layer(errors);
  });
  attempt("KV cache error", [&] {
    const auto m =
        model::load_model(model_path, compute::BackendChoice(compute::BackendKind::kCpu));
    for (const eval::KvLayerError& layer :
         eval::measure_kv_error(*m->transformer, prompt_ids, kKvType).layers) {
      lab.kv_layers.push_back({layer.layer, sqnr_db(layer.keys, layer.values),
                               sqnr_db(layer.keys_rounding_only, layer.values_rounding_only)});
    }
    lab.baseline_ids = continue_greedily(*m->transformer, prompt_ids);
  });
  attempt("quantised continuation", [&] {
    const auto variant =
        eval::load_quantised_variant(file, kWeightType, compute::BackendKind::kCpu);
    lab.variant_ids = continue_greedily(*variant->transformer, prompt_ids);
  });
  if (control.on_quick_parts) control.on_quick_parts(lab);

  attempt("variants", [&] {
    lab.options = lab_options(tokenizer, text, types);
    lab.options.on_stage = control.on_stage;
    lab.options.cancel = control.cancel;
    const model::ModelConfig config = model::read_model_config(file);
    lab.load = cli::load_description(
        eval::report_load(lab.options, static_cast<int32_t>(config.vocab_size)),
        eval::report_load_engine(lab.options, gguf::GgmlType::F32));
    lab.report = eval::run_quant_report(file, lab.options);
  });
  if (!lab.report.baseline.type.empty() && !std::isfinite(lab.report.baseline.quality.perplexity)) {
    lab.problems.push_back(
        "quality: the model's outputs are not a number (its weights hold NaN or Inf), so "
        "its perplexity, KL and top-1 were not measured and no variant is accepted");
  }
  lab.options.on_stage = {};  // the report outlives the caller's callbacks
  lab.options.cancel = nullptr;
  lab.complete = true;
  return lab;
}

widgets::QuantLimits default_lab_limits() {
  widgets::QuantLimits limits;
  limits.max_kl = 0.05;
  return limits;
}

QuantLabReport with_last_comparison(QuantLabReport quick, const QuantLabReport& last) {
  if (quick.complete || !quick.report.baseline.type.empty() || last.report.baseline.type.empty() ||
      quick.model_path != last.model_path) {
    return quick;
  }
  quick.types = last.types;
  quick.options = last.options;
  quick.load = last.load;
  quick.report = last.report;
  return quick;
}

}  // namespace servescope::gui
