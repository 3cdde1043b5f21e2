// servescope-cli kv-error: per layer, how far the keys and values an F16 or Q8_0 cache holds
// after a prompt are from those of an F32 cache.
#include <iostream>

#include "app/cli/command_support.h"
#include "engine/eval/kv_error.h"
#include "engine/eval/quantize_model.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

json error_json(const eval::TensorError& e) {
  return {{"elements", e.elements},
          {"rmse", e.rmse},
          {"max_abs_error", e.max_abs_error},
          {"relative_error", finite_or_null(e.relative_error)},
          {"sqnr_db", finite_or_null(e.sqnr_db)}};
}

// --prompt TEXT or the text of --text-file, with BOS as for generation.
std::vector<int32_t> text_ids(const Options& options, const model::Model& m) {
  if (options.has("prompt") == options.has("text-file")) {
    throw UsageError("give exactly one of --prompt TEXT or --text-file PATH");
  }
  if (options.has("prompt")) return m.require_tokenizer().encode_with_bos(*options.get("prompt"));
  return m.require_tokenizer().encode_with_bos(read_regular_file(*options.get("text-file")));
}

}  // namespace

int run_kv_error(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"prompt", "text-file", "kv-type"}, {}}));
  if (!options.has("kv-type")) throw UsageError("kv-error needs --kv-type f16|q8_0");
  const gguf::GgmlType kv_type = eval::parse_kv_type(*options.get("kv-type"));
  if (kv_type == gguf::GgmlType::F32) {
    throw UsageError("--kv-type f32 is the reference; compare f16 or q8_0 against it");
  }
  const auto m = open_model(options);
  std::vector<int32_t> ids = text_ids(options, *m);
  const size_t text_tokens = ids.size();
  const auto context = static_cast<size_t>(m->config.context_length);
  if (ids.size() > context) {
    ids.resize(context);
    std::cerr << "kv-error: compared the first " << context << " of " << text_tokens
              << " tokens (the model's context)\n";
  }
  const eval::KvErrorReport report = eval::measure_kv_error(*m->transformer, ids, kv_type);
  json layers = json::array();
  for (const eval::KvLayerError& l : report.layers) {
    layers.push_back({{"layer", l.layer},
                      {"keys", error_json(l.keys)},
                      {"values", error_json(l.values)},
                      {"keys_rounding_only", error_json(l.keys_rounding_only)},
                      {"values_rounding_only", error_json(l.values_rounding_only)}});
  }
  out << json{{"model", m->file.name()},
              {"backend", m->backend->name()},
              {"kv_type", eval::weight_type_label(kv_type)},
              {"reference", "f32"},
              {"tokens", report.tokens},
              {"text_tokens", text_tokens},
              {"layers", layers}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
