// servescope-cli quant-report: quality, memory and speed of each weight and KV type against
// F32, with a verdict.
#include <iostream>
#include <sstream>

#include "app/cli/command_support.h"
#include "app/cli/commands.h"
#include "app/common/data_files.h"
#include "engine/eval/quant_report.h"
#include "engine/eval/quantize_model.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

json quality_json(const eval::VariantQuality& q) {
  return {{"perplexity", q.perplexity},
          {"mean_kl", q.vs_baseline.mean_kl},
          {"p99_kl", q.vs_baseline.p99_kl},
          {"max_kl", q.vs_baseline.max_kl},
          {"top1_agreement", q.vs_baseline.top1_agreement}};
}

json verdict_json(const eval::Verdict& verdict) {
  json checks = json::array();
  for (const eval::LimitCheck& c : verdict.checks) {
    checks.push_back({{"limit", c.limit}, {"passed", c.passed}, {"reason", c.reason}});
  }
  return {{"accepted", verdict.accepted}, {"checks", checks}, {"reasons", verdict.reasons}};
}

json variant_json(const eval::VariantReport& v, const std::string& load) {
  const json layers = layer_errors_json(v.weight_error);
  return {{"type", v.type},
          {"kv_type", v.kv_type},
          {"weight_bytes", v.weight_bytes},
          {"bits_per_weight", v.bits_per_weight},
          {"tensor_types", v.tensor_types},
          {"weight_bytes_ratio", v.weight_bytes_ratio},
          {"kv_bytes_per_token", v.kv_bytes_per_token},
          {"memory_bytes", v.memory_bytes},
          {"memory_ratio", v.memory_ratio},
          {"quality", quality_json(v.quality)},
          {"greedy_identical_tokens", v.greedy_identical_tokens},
          {"prefill_tokens_per_s", v.prefill_tokens_per_s},
          {"decode_tokens_per_s", v.decode_tokens_per_s},
          {"prefill_speedup", v.prefill_speedup},
          {"decode_speedup", v.decode_speedup},
          {"weight_error_by_layer", layers},
          {"throughput_under_load_tokens_per_s", v.load.output_tokens_per_s},
          {"latency", latency_json(v.load, load)},
          {"cost", cost_json(v.cost)},
          {"verdict", verdict_json(v.verdict)}};
}

}  // namespace

int run_quant_report(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args,
                        with_common({{"types", "text-file", "max-chunks", "max-kl", "min-speedup",
                                      "greedy-tokens", "kv-types", "max-tpot-ms", "price-per-hour"},
                                     {}}));
  const std::string path = options.get_or("model", default_model_path());
  const auto m = open_model(options);  // the source: its tokenizer and backend choice
  eval::QuantReportOptions ro;
  ro.types.clear();
  std::stringstream list(options.get_or("types", "f32,f16,q8_0,q4_0"));
  for (std::string item; std::getline(list, item, ',');)
    ro.types.push_back(eval::parse_quantize_scheme(item));
  ro.kv_types.clear();
  std::stringstream kv_list(options.get_or("kv-types", "f32"));
  for (std::string item; std::getline(kv_list, item, ',');)
    ro.kv_types.push_back(eval::parse_kv_type(item));
  ro.backend = compute::parse_backend_kind(options.get_or("backend", "cpu"));
  ro.text_ids = evaluation_ids(options, *m);
  ro.bos_id = m->require_tokenizer().vocabulary().bos_id;
  ro.max_chunks = options.get_int("max-chunks", 0);
  ro.greedy_tokens = options.get_int("greedy-tokens", ro.greedy_tokens);
  ro.max_kl = options.get_double("max-kl", ro.max_kl);
  ro.min_speedup = options.get_double("min-speedup", ro.min_speedup);
  ro.max_tpot_ms = options.get_double("max-tpot-ms", ro.max_tpot_ms);
  if (!(ro.max_tpot_ms > 0.0)) throw UsageError("--max-tpot-ms needs a limit above 0 ms");
  ro.price_per_hour = price_per_hour_option(options);
  const std::string load =
      load_description(eval::report_load(ro, static_cast<int32_t>(m->config.vocab_size)),
                       eval::report_load_engine(ro, gguf::GgmlType::F32));
  const eval::QuantReport report = eval::run_quant_report(m->file, ro, stderr_eval_progress());
  if (report.positions < report.text_positions) {
    std::cerr << "quant-report: evaluated the first " << report.positions << " of "
              << report.text_positions
              << " positions (the baseline's distributions must fit in memory)\n";
  }

  json variants = json::array();
  for (const eval::VariantReport& v : report.variants) variants.push_back(variant_json(v, load));
  out << json{{"model", path},
              {"backend", report.backend},
              {"text", options.get_or("text-file", app::bundled_eval_text_path().string())},
              {"positions", report.positions},
              {"text_positions", report.text_positions},
              {"kv_types", options.get_or("kv-types", "f32")},
              {"load", load},
              {"limits",
               {{"max_kl", finite_or_null(ro.max_kl)},
                {"max_tpot_ms", finite_or_null(ro.max_tpot_ms)},
                {"min_speedup", ro.min_speedup}}},
              {"baseline", variant_json(report.baseline, load)},
              {"variants", variants}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
