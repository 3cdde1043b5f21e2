// The measure table: each name of the vocabulary and the figure it reads.
#include "app/gui/lesson_ui/measure_reader.h"

#include <QCoreApplication>
#include <algorithm>
#include <functional>
#include <map>

#include "app/gui/lesson_ui/measure_figures.h"
#include "app/gui/window/main_window.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/records.h"
#include "widgets/roofline_panel.h"

namespace servescope::gui {

using namespace measure_figures;

namespace {

using Reader = std::function<MeasureValue(const MeasureInputs&)>;

const std::vector<std::pair<std::string_view, Reader>>& readers() {
  static const std::vector<std::pair<std::string_view, Reader>> list = {
      {"kv_bytes", [](const MeasureInputs& in) { return kv_share(in, false, false); }},
      {"kv_tokens", [](const MeasureInputs& in) { return kv_share(in, false, true); }},
      {"kv_allocated_bytes", [](const MeasureInputs& in) { return kv_share(in, true, false); }},
      {"kv_bytes_per_token",
       [](const MeasureInputs& in) {
         if (!in.engine) return missing("bytes", "Load a model first.");
         return value(static_cast<double>(in.engine->kv_bytes_per_token), "bytes");
       }},
      {"weight_bytes",
       [](const MeasureInputs& in) {
         if (!in.engine) return missing("bytes", "Load a model first.");
         return value(static_cast<double>(in.engine->weight_bytes), "bytes");
       }},
      {"prefill_ms", [](const MeasureInputs& in) { return from_request(in, "ms", prefill_ms); }},
      {"prefill_ms_per_token",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", [](const telemetry::RequestRecord& r) {
           const auto computed = static_cast<double>(r.prompt_tokens - r.cached_prompt_tokens);
           return computed > 0.0 ? prefill_ms(r) / computed : 0.0;
         });
       }},
      {"prefill_tokens_per_s",
       [](const MeasureInputs& in) {
         return from_request(in, "tokens/s", [](const telemetry::RequestRecord& r) {
           const double ms = prefill_ms(r);
           const auto computed = static_cast<double>(r.prompt_tokens - r.cached_prompt_tokens);
           return ms > 0.0 ? computed * 1000.0 / ms : 0.0;
         });
       }},
      {"decode_ms_per_token",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", telemetry::time_per_output_token_ms);
       }},
      {"decode_tokens_per_s",
       [](const MeasureInputs& in) {
         return from_request(in, "tokens/s", [](const telemetry::RequestRecord& r) {
           const double tpot = telemetry::time_per_output_token_ms(r);
           return tpot > 0.0 ? 1000.0 / tpot : 0.0;
         });
       }},
      {"achieved_gbs", achieved_gbs},
      {"decode_flops_per_byte", decode_flops_per_byte},
      {"decode_kv_bytes_per_step",
       [](const MeasureInputs& in) {
         return per_rode_step(in, &RodeSums::kv_bytes_read, "bytes");
       }},
      {"memory_roof_gbs",
       [](const MeasureInputs& in) {
         return roof(in, &compute::StepRoofs::memory_gb_per_s, "GB/s");
       }},
      {"cache_roof_gbs",
       [](const MeasureInputs& in) {
         return roof(in, &compute::StepRoofs::cache_gb_per_s, "GB/s");
       }},
      {"compute_roof_gflops",
       [](const MeasureInputs& in) {
         return roof(in, &compute::StepRoofs::compute_gflop_per_s, "GFLOP/s");
       }},
      {"sweep_speedup_8", [](const MeasureInputs& in) { return sweep_speedup(in, 8); }},
      {"sweep_speedup_16", [](const MeasureInputs& in) { return sweep_speedup(in, 16); }},
      {"sweep_ms_per_1k_tokens_1",
       [](const MeasureInputs& in) { return sweep_ms_per_1k_tokens(in, 1); }},
      {"sweep_ms_per_1k_tokens_8",
       [](const MeasureInputs& in) { return sweep_ms_per_1k_tokens(in, 8); }},
      {"sweep_ms_per_1k_tokens_16",
       [](const MeasureInputs& in) { return sweep_ms_per_1k_tokens(in, 16); }},
      {"sweep_step_ms_1", [](const MeasureInputs& in) { return sweep_step_ms(in, 1); }},
      {"sweep_step_ms_8", [](const MeasureInputs& in) { return sweep_step_ms(in, 8); }},
      {"sweep_step_ms_16", [](const MeasureInputs& in) { return sweep_step_ms(in, 16); }},
      {"load_tokens_per_s",
       [](const MeasureInputs& in) {
         return from_staggered_load(in, "tokens/s", [](const StaggeredLoadResult& r) {
           return r.summary.output_tokens_per_s;
         });
       }},
      {"load_ttft_p50_ms",
       [](const MeasureInputs& in) {
         return from_staggered_load(
             in, "ms", [](const StaggeredLoadResult& r) { return r.summary.ttft_ms.p50; });
       }},
      {"load_steps",
       [](const MeasureInputs& in) {
         return from_staggered_load(in, "steps", [](const StaggeredLoadResult& r) {
           return static_cast<double>(r.summary.steps);
         });
       }},
      {"load_mean_batch",
       [](const MeasureInputs& in) {
         return from_staggered_load(in, "requests",
                                    [](const StaggeredLoadResult& r) { return r.mean_batch(); });
       }},
      {"size_sweep_gbs",
       [](const MeasureInputs& in) {
         const std::optional<double> gbs = fitted_bandwidth_gbs(*in.size_sweep);
         if (!gbs) return missing("GB/s", "Run the size sweep first (two sizes or more).");
         return value(*gbs, "GB/s");
       }},
      {"size_sweep_gflops",
       [](const MeasureInputs& in) {
         const std::optional<double> gflops = fitted_gflop_per_s(*in.size_sweep);
         if (!gflops) return missing("GFLOP/s", "Run the size sweep first (two sizes or more).");
         return value(*gflops, "GFLOP/s");
       }},
      // Weight bytes per step: every matrix, but one embedding row per token.
      {"decode_weight_bytes",
       [](const MeasureInputs& in) {
         return per_rode_step(in, &RodeSums::weight_bytes_read, "bytes");
       }},
      {"decode_step_ms",
       [](const MeasureInputs& in) { return per_rode_step(in, &RodeSums::step_ms, "ms"); }},
      {"attention_ms_per_100_context", attention_ms_per_100_context},
      {"decode_attention_ms", decode_attention_ms},
      {"working_set_roof_gbs", working_set_roof_gbs},
      {"ttft_ms",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", telemetry::time_to_first_token_ms);
       }},
      {"tpot_ms",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", telemetry::time_per_output_token_ms);
       }},
      {"class_tokens_per_s", class_tokens_per_s},
      {"evictions",
       [](const MeasureInputs& in) {
         return kv_events_since(in, telemetry::KvEventKind::kEvict, "events");
       }},
      {"preemptions",
       [](const MeasureInputs& in) {
         return kv_events_since(in, telemetry::KvEventKind::kPreempt, "requests");
       }},
      {"peak_batch",
       [](const MeasureInputs& in) {
         return from_reservation(in, "requests", [](const ReservationComparison& c) {
           return static_cast<double>(c.requests);
         });
       }},
      {"peak_paged_bytes",
       [](const MeasureInputs& in) {
         return from_reservation(in, "bytes",
                                 [](const ReservationComparison& c) { return c.paged_bytes; });
       }},
      {"peak_reserved_bytes",
       [](const MeasureInputs& in) {
         return from_reservation(in, "bytes",
                                 [](const ReservationComparison& c) { return c.reserved_bytes; });
       }},
      {"peak_paged_share",
       [](const MeasureInputs& in) {
         return from_reservation(in, "%", [](const ReservationComparison& c) {
           return 100.0 * c.paged_bytes / c.reserved_bytes;
         });
       }},
      {"pool_full_contexts",
       [](const MeasureInputs& in) {
         if (!in.engine) return missing("requests", "Load a model first.");
         return value(static_cast<double>(full_context_reservations(*in.engine)), "requests");
       }},
      {"peak_beyond_reservation",
       [](const MeasureInputs& in) {
         return from_reservation(in, "requests", [](const ReservationComparison& c) {
           return static_cast<double>(std::max<int64_t>(0, c.requests - c.full_contexts));
         });
       }},
      {"all_points_under_roofs", all_points_under_roofs},
      {"variant_mean_kl",
       [](const MeasureInputs& in) {
         return from_variant(in, "nats", [](const eval::VariantReport& v) {
           return v.quality.vs_baseline.mean_kl;
         });
       }},
      {"variant_top1_agreement",
       [](const MeasureInputs& in) {
         return from_variant(in, "%", [](const eval::VariantReport& v) {
           return 100.0 * v.quality.vs_baseline.top1_agreement;
         });
       }},
      {"variant_prefill_speedup",
       [](const MeasureInputs& in) {
         return from_variant(in, "x",
                             [](const eval::VariantReport& v) { return v.prefill_speedup; });
       }},
      {"variant_decode_speedup",
       [](const MeasureInputs& in) {
         return from_variant(in, "x",
                             [](const eval::VariantReport& v) { return v.decode_speedup; });
       }},
      {"variant_tpot_p99_ms",
       [](const MeasureInputs& in) {
         return from_variant(in, "ms",
                             [](const eval::VariantReport& v) { return v.load.tpot_ms.p99; });
       }},
      {"kv_sqnr_first_db", [](const MeasureInputs& in) { return kv_sqnr(in, false, false); }},
      {"kv_sqnr_last_db", [](const MeasureInputs& in) { return kv_sqnr(in, true, false); }},
      {"kv_rounding_sqnr_last_db",
       [](const MeasureInputs& in) { return kv_sqnr(in, true, true); }},
  };
  return list;
}

}  // namespace

MeasureInputs measure_inputs(const MainWindow& window, const std::vector<SizeSweepPoint>& sizes,
                             const FoldCounts* since, std::string variant) {
  MeasureInputs in;
  in.since = since;
  in.quant_lab = window.quant_lab() && window.quant_lab()->complete ? &*window.quant_lab() : nullptr;
  in.variant = std::move(variant);
  in.folder = &window.folder();
  in.engine = window.engine_info() ? &*window.engine_info() : nullptr;
  in.user_request = window.user_request();
  in.batch_sweep = &window.batch_sweep();
  in.staggered_load = window.staggered_load() ? &*window.staggered_load() : nullptr;
  in.size_sweep = &sizes;
  return in;
}

const std::vector<std::string_view>& implemented_measures() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> list;
    for (const auto& [name, reader] : readers()) list.push_back(name);
    return list;
  }();
  return names;
}

MeasureValue read_measure(const MeasureInputs& inputs, std::string_view name) {
  for (const auto& [known, reader] : readers()) {
    if (known == name) return reader(inputs);
  }
  return {std::nullopt,
          {},
          QCoreApplication::translate("MeasureReader", "No measure is called %1.")
              .arg(QString::fromUtf8(name.data(), static_cast<int>(name.size())))};
}

}  // namespace servescope::gui
