#include "app/gui/lesson_ui/measure_reader.h"

#include <QCoreApplication>
#include <algorithm>
#include <functional>
#include <map>

#include "app/gui/engine_bridge/measured_roofs.h"
#include "app/gui/window/main_window.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/records.h"
#include "widgets/roofline_panel.h"

namespace servescope::gui {
namespace {

constexpr const char* kGenerateFirst = "Generate first: it is measured on your request.";

const telemetry::RequestRecord* user_record(const MeasureInputs& in) {
  if (in.user_request < 0) return nullptr;
  for (auto it = in.folder->requests().rbegin(); it != in.folder->requests().rend(); ++it) {
    if (it->request_id == in.user_request) return &*it;
  }
  return nullptr;
}

MeasureValue value(double v, const char* unit) { return {v, unit, {}}; }
MeasureValue missing(const char* unit, const QString& why) { return {std::nullopt, unit, why}; }

// A figure of the user's finished request; `figure` returns <= 0 when it is not defined.
MeasureValue from_request(const MeasureInputs& in, const char* unit,
                          const std::function<double(const telemetry::RequestRecord&)>& figure) {
  const telemetry::RequestRecord* r = user_record(in);
  if (!r) return missing(unit, kGenerateFirst);
  const double v = figure(*r);
  if (v <= 0.0) return missing(unit, "Generate more tokens: too few to measure this.");
  return value(v, unit);
}

double prefill_ms(const telemetry::RequestRecord& r) {
  return r.token_times_ms.empty() ? 0.0 : r.token_times_ms.front() - r.first_scheduled_ms;
}

MeasureValue kv_share(const MeasureInputs& in, bool allocated, bool tokens) {
  const char* unit = tokens ? "tokens" : "bytes";
  if (!in.engine || in.user_request < 0) return missing(unit, kGenerateFirst);
  const std::optional<SequenceKv> kv = in.folder->sequence_kv(in.user_request);
  if (!kv) return missing(unit, kGenerateFirst);
  if (tokens) return value(static_cast<double>(kv->tokens_written), unit);
  if (allocated) {
    return value(
        static_cast<double>(kv->blocks) * static_cast<double>(in.engine->kv_bytes_per_block), unit);
  }
  return value(
      static_cast<double>(kv->tokens_written) * static_cast<double>(in.engine->kv_bytes_per_token),
      unit);
}

// The roofs the roofline draws: the probe's raised by the steps that beat them.
MeasureValue roof(const MeasureInputs& in, double compute::StepRoofs::*field, const char* unit) {
  if (!in.engine) return missing(unit, "Load a model first.");
  const double v = roofs_under_steps(in.engine->roofs, in.folder->steps()).*field;
  if (v <= 0.0) return missing(unit, "This device's roofs were not measured.");
  return value(v, unit);
}

// The bandwidth roof the loaded model's weights are read under: the cache roof when they fit
// the last-level cache, else main memory's (as the roofline judges a step by its working set).
MeasureValue working_set_roof_gbs(const MeasureInputs& in) {
  if (!in.engine) return missing("GB/s", "Load a model first.");
  const compute::StepRoofs roofs = roofs_under_steps(in.engine->roofs, in.folder->steps());
  const bool in_cache = compute::bandwidth_roof_for(roofs, in.engine->weight_bytes) ==
                        compute::BandwidthRoofKind::kCache;
  const double v = in_cache ? roofs.cache_gb_per_s : roofs.memory_gb_per_s;
  if (v <= 0.0) return missing("GB/s", "This device's roofs were not measured.");
  return value(v, "GB/s");
}

// How much a batch-1 decode step's attention time grew per 100 tokens of context: the
// least-squares slope of its attention kernels' time against the positions it attended over.
// (The whole step's growth on a small model hides under the noise of the weight reads.)
MeasureValue attention_ms_per_100_context(const MeasureInputs& in) {
  std::vector<std::pair<double, double>> xy;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    if (!telemetry::is_decode_step(s) || s.batch.size() != 1 || !s.kernel_times_measured) continue;
    xy.emplace_back(static_cast<double>(s.batch.front().start_position + 1),
                    s.kernel_times.attention_ms);
  }
  const std::optional<double> slope = thirds_slope(std::move(xy));
  if (!slope) {
    return missing("ms", "Generate first: it is measured on decode steps whose kernels this "
                         "backend times.");
  }
  return value(*slope * 100.0, "ms");
}

// The mean attention time of those steps.
MeasureValue decode_attention_ms(const MeasureInputs& in) {
  double ms = 0.0;
  int64_t steps = 0;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    if (!telemetry::is_decode_step(s) || s.batch.size() != 1 || !s.kernel_times_measured) continue;
    ms += s.kernel_times.attention_ms;
    ++steps;
  }
  if (steps == 0) {
    return missing("ms", "Generate first: it is measured on decode steps whose kernels this "
                         "backend times.");
  }
  return value(ms / static_cast<double>(steps), "ms");
}

// Tokens every request got (the learner's and the classmates') from the learner's arrival to
// its last token, per second of that span: the server's throughput while the learner waited
// and was served, waiting for a batch included.
MeasureValue class_tokens_per_s(const MeasureInputs& in) {
  const telemetry::RequestRecord* r = user_record(in);
  if (!r || r->token_times_ms.empty()) return missing("tokens/s", kGenerateFirst);
  const double from = r->arrival_ms;
  const double to = r->token_times_ms.back();
  int64_t tokens = 0;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    if (s.end_ms <= from || s.end_ms > to) continue;
    for (const telemetry::BatchEntry& e : s.batch) tokens += e.sampled_token >= 0 ? 1 : 0;
  }
  if (to <= from || tokens == 0) return missing("tokens/s", kGenerateFirst);
  return value(static_cast<double>(tokens) * 1000.0 / (to - from), "tokens/s");
}

// Sums over the decode steps (telemetry::is_decode_step: no prompt tokens riding along) that
// made the learner's later tokens, with how many there were; nullopt when there were none.
struct RodeSums {
  int64_t steps = 0;
  double flops = 0.0;
  double bytes = 0.0;  // moved: weights and KV read, KV written
  double weight_bytes_read = 0.0;
  double kv_bytes_read = 0.0;
  double step_ms = 0.0;
};
std::optional<RodeSums> steps_rode(const MeasureInputs& in) {
  const telemetry::RequestRecord* r = user_record(in);
  if (!r) return std::nullopt;
  RodeSums sums;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    if (!telemetry::is_decode_step(s) || !telemetry::made_later_token(*r, s)) continue;
    ++sums.steps;
    sums.flops += s.flops;
    sums.bytes += static_cast<double>(s.bytes_moved());
    sums.weight_bytes_read += static_cast<double>(s.weight_bytes_read);
    sums.kv_bytes_read += static_cast<double>(s.kv_bytes_read);
    sums.step_ms += telemetry::step_time_ms(s);
  }
  if (sums.steps == 0 || sums.bytes <= 0.0) return std::nullopt;
  return sums;
}

MeasureValue decode_flops_per_byte(const MeasureInputs& in) {
  const std::optional<RodeSums> sums = steps_rode(in);
  if (!sums) return missing("FLOP/byte", kGenerateFirst);
  return value(sums->flops / sums->bytes, "FLOP/byte");
}

// One of RodeSums' totals per step: the mean over the decode steps the learner's tokens rode.
MeasureValue per_rode_step(const MeasureInputs& in, double RodeSums::*total, const char* unit) {
  const std::optional<RodeSums> sums = steps_rode(in);
  if (!sums) return missing(unit, kGenerateFirst);
  return value((*sums).*total / static_cast<double>(sums->steps), unit);
}

// Bytes moved over step time, summed over the same steps: decode_weight_bytes plus the KV
// traffic, over decode_step_ms.
MeasureValue achieved_gbs(const MeasureInputs& in) {
  const std::optional<RodeSums> sums = steps_rode(in);
  if (!sums || sums->step_ms <= 0.0) return missing("GB/s", kGenerateFirst);
  return value(sums->bytes / sums->step_ms / 1e6, "GB/s");
}

// The batch sweep's point at max batch `batch`; nullptr before the sweep measured that size.
const BatchSweepPoint* sweep_point(const MeasureInputs& in, int64_t batch) {
  for (const BatchSweepPoint& p : *in.batch_sweep) {
    if (p.max_batch == batch && p.tokens_per_s() > 0.0) return &p;
  }
  return nullptr;
}

constexpr const char* kSweepFirst = "Run the batch sweep first.";

// Throughput at max batch `batch` over batch 1's, from the batch sweep.
MeasureValue sweep_speedup(const MeasureInputs& in, int64_t batch) {
  const BatchSweepPoint* one = sweep_point(in, 1);
  const BatchSweepPoint* at_batch = sweep_point(in, batch);
  if (!one || !at_batch) return missing("x", kSweepFirst);
  return value(at_batch->tokens_per_s() / one->tokens_per_s(), "x");
}

// What 1,000 decode tokens cost in machine time at max batch `batch`: 10^6 / tokens per second
// (the sweep chart's throughput), so a request's share of the steps it shares with the batch.
MeasureValue sweep_ms_per_1k_tokens(const MeasureInputs& in, int64_t batch) {
  const BatchSweepPoint* p = sweep_point(in, batch);
  if (!p) return missing("ms", kSweepFirst);
  return value(1e6 / p->tokens_per_s(), "ms");
}

// The mean decode step time at max batch `batch` (the sweep chart's step latency): how long
// every request of the batch waits for each of its tokens.
MeasureValue sweep_step_ms(const MeasureInputs& in, int64_t batch) {
  const BatchSweepPoint* p = sweep_point(in, batch);
  if (!p) return missing("ms", kSweepFirst);
  return value(p->decode_step_ms(), "ms");
}

// A figure of the last staggered load's summary; none before one ran to its end.
MeasureValue from_staggered_load(const MeasureInputs& in, const char* unit,
                                 double (*figure)(const StaggeredLoadResult&)) {
  if (!in.staggered_load) return missing(unit, "Run a staggered load first.");
  if (!in.staggered_load->complete()) {
    return missing(unit,
                   "The staggered load was stopped before its requests finished; run it "
                   "again.");
  }
  return value(figure(*in.staggered_load), unit);
}

// KV events of one kind since the experiment started (the folder starts over with each
// engine, and then so does the count).
MeasureValue kv_events_since(const MeasureInputs& in, telemetry::KvEventKind kind,
                             const char* unit) {
  if (!in.engine) return missing(unit, "Load a model first.");
  const FoldCounts& now = in.folder->counts();
  const auto k = static_cast<size_t>(kind);
  int64_t count = now.kv_events_by_kind[k];
  if (in.since && in.since->steps <= now.steps && in.since->kv_events_by_kind[k] <= count) {
    count -= in.since->kv_events_by_kind[k];
  }
  return value(static_cast<double>(count), unit);
}

// Paging against reserving each request's maximum length, at the experiment's busiest step:
// the step that ran the most requests, and of those the one whose blocks held the most (the
// fullest the paged pool was at that batch, the case kindest to reservation). Counts only, so
// the figures are the same on every machine that schedules the same way.
struct ReservationComparison {
  int64_t requests = 0;        // requests that ran in that step
  double paged_bytes = 0.0;    // the pool's blocks in use x bytes per block
  double reserved_bytes = 0.0;  // requests x the model's context x bytes per token
  int64_t full_contexts = 0;   // whole-context reservations the same pool holds
};

// The steps folded since the experiment started (all the folder keeps without `since`, or when
// a new engine started the count over).
std::vector<const telemetry::StepRecord*> experiment_steps(const MeasureInputs& in) {
  const std::deque<telemetry::StepRecord>& steps = in.folder->steps();
  size_t count = steps.size();
  const int64_t now = in.folder->counts().steps;
  if (in.since && in.since->steps <= now) {
    count = std::min(count, static_cast<size_t>(now - in.since->steps));
  }
  std::vector<const telemetry::StepRecord*> list;
  for (auto it = steps.end() - static_cast<std::ptrdiff_t>(count); it != steps.end(); ++it) {
    list.push_back(&*it);
  }
  return list;
}

// How many requests the pool holds when each reserves the model's whole context up front.
int64_t full_context_reservations(const EngineInfo& e) {
  return e.context_length > 0 ? e.kv_blocks * e.block_size / e.context_length : 0;
}

std::optional<ReservationComparison> compare_with_reservation(const MeasureInputs& in) {
  if (!in.engine || in.engine->context_length <= 0 || in.engine->kv_bytes_per_token == 0) {
    return std::nullopt;
  }
  const telemetry::StepRecord* peak = nullptr;
  for (const telemetry::StepRecord* s : experiment_steps(in)) {
    if (!peak || std::pair(s->sequences, s->kv_blocks_used) >
                     std::pair(peak->sequences, peak->kv_blocks_used)) {
      peak = s;
    }
  }
  if (!peak || peak->sequences == 0) return std::nullopt;
  const EngineInfo& e = *in.engine;
  ReservationComparison c;
  c.requests = peak->sequences;
  c.paged_bytes =
      static_cast<double>(peak->kv_blocks_used) * static_cast<double>(e.kv_bytes_per_block);
  c.reserved_bytes = static_cast<double>(peak->sequences) *
                     static_cast<double>(e.context_length) *
                     static_cast<double>(e.kv_bytes_per_token);
  c.full_contexts = full_context_reservations(e);
  return c;
}

// One figure of the comparison.
MeasureValue from_reservation(const MeasureInputs& in, const char* unit,
                              const std::function<double(const ReservationComparison&)>& figure) {
  const std::optional<ReservationComparison> c = compare_with_reservation(in);
  if (!c) return missing(unit, "Run an experiment first: it is read from the steps it ran.");
  return value(figure(*c), unit);
}

// 1 when every step the roofline places (FLOP per byte, achieved GFLOP/s) is at or under the
// roof that bounds it, as the panel judges it: the bandwidth roof its working set belongs to
// (cache or main memory), capped by the compute roof, all raised by the steps that beat them;
// 0 when one rises above.
MeasureValue all_points_under_roofs(const MeasureInputs& in) {
  const char* unit = "true/false";
  if (!in.engine) return missing(unit, "Load a model first.");
  const compute::StepRoofs roofs = roofs_under_steps(in.engine->roofs, in.folder->steps());
  if (roofs.memory_gb_per_s <= 0.0 || roofs.compute_gflop_per_s <= 0.0) {
    return missing(unit, "This device's roofs were not measured.");
  }
  int64_t placed = 0;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    const double intensity = telemetry::arithmetic_intensity(s);
    const double gflops = telemetry::achieved_gflop_per_s(s);
    if (intensity <= 0.0 || gflops <= 0.0) continue;  // the panel does not place it either
    ++placed;
    const double bandwidth =
        compute::bandwidth_roof_for(roofs, s.bytes_moved()) == compute::BandwidthRoofKind::kCache
            ? roofs.cache_gb_per_s
            : roofs.memory_gb_per_s;
    const double roof =
        widgets::attainable_gflop_per_s(intensity, bandwidth, roofs.compute_gflop_per_s);
    if (gflops > roof * (1.0 + 1e-9)) return value(0.0, unit);  // 1e-9: rounding of a raise
  }
  if (placed == 0) return missing(unit, "Generate first: the roofline places measured steps.");
  return value(1.0, unit);
}

constexpr const char* kCompareFirst = "Compare the variants first (quant_compare).";

// The comparison row the variant_* measures read; nullptr before a complete comparison holds it.
const eval::VariantReport* chosen_variant(const MeasureInputs& in) {
  if (!in.quant_lab || in.quant_lab->report.baseline.type.empty()) return nullptr;
  if (in.variant == "baseline") return &in.quant_lab->report.baseline;
  for (const eval::VariantReport& v : in.quant_lab->report.variants) {
    if (v.type == in.variant) return &v;
  }
  return nullptr;
}

MeasureValue from_variant(const MeasureInputs& in, const char* unit,
                          const std::function<double(const eval::VariantReport&)>& figure) {
  const eval::VariantReport* v = chosen_variant(in);
  if (!v) {
    return missing(unit, in.variant.empty()
                             ? QCoreApplication::translate("MeasureReader",
                                                           "Choose a row first (select_variant).")
                             : QCoreApplication::translate(
                                   "MeasureReader", "%1 has no row in the last comparison; %2")
                                   .arg(QString::fromStdString(in.variant), kCompareFirst));
  }
  return value(figure(*v), unit);
}

// A layer's SQNR of the lab's Q8_0 KV cache (first or last layer; its own rounding alone or
// the cache as stored).
MeasureValue kv_sqnr(const MeasureInputs& in, bool last, bool rounding_only) {
  if (!in.quant_lab || in.quant_lab->kv_layers.empty()) return missing("dB", kCompareFirst);
  const KvLayerSqnr& layer =
      last ? in.quant_lab->kv_layers.back() : in.quant_lab->kv_layers.front();
  return value(rounding_only ? layer.rounding_only_sqnr_db : layer.sqnr_db, "dB");
}

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

namespace {

// The least-squares slope of decode time (ms) against `work` per token, inverted: work per ms.
// nullopt with fewer than two sizes or a slope <= 0.
std::optional<double> fitted_work_per_ms(const std::vector<SizeSweepPoint>& points,
                                         double (*work)(const SizeSweepPoint&)) {
  std::vector<std::pair<double, double>> xy;
  for (const SizeSweepPoint& p : points) xy.emplace_back(work(p), p.decode_ms_per_token);
  const std::optional<double> ms_per_work = least_squares_slope(xy);
  if (!ms_per_work || *ms_per_work <= 0.0) return std::nullopt;
  return 1.0 / *ms_per_work;
}

}  // namespace

std::optional<double> thirds_slope(std::vector<std::pair<double, double>> xy) {
  if (xy.size() < 3) return std::nullopt;
  std::ranges::sort(xy);
  const size_t third = xy.size() / 3;
  const auto median_of = [](std::vector<double> v) {
    std::ranges::nth_element(v, v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2));
    return v[v.size() / 2];
  };
  const auto part = [&](size_t from, size_t to) {
    std::vector<double> xs;
    std::vector<double> ys;
    for (size_t i = from; i < to; ++i) {
      xs.push_back(xy[i].first);
      ys.push_back(xy[i].second);
    }
    return std::pair{median_of(xs), median_of(ys)};
  };
  const auto [x0, y0] = part(0, third);
  const auto [x1, y1] = part(xy.size() - third, xy.size());
  if (x1 <= x0) return std::nullopt;
  return (y1 - y0) / (x1 - x0);
}

std::optional<double> least_squares_slope(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 2) return std::nullopt;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (const auto& [x, y] : xy) {
    mean_x += x;
    mean_y += y;
  }
  const auto n = static_cast<double>(xy.size());
  mean_x /= n;
  mean_y /= n;
  double sxy = 0.0;
  double sxx = 0.0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mean_x) * (y - mean_y);
    sxx += (x - mean_x) * (x - mean_x);
  }
  if (sxx <= 0.0) return std::nullopt;
  return sxy / sxx;
}

std::optional<DecodeStepMeans> mean_decode_step(const std::deque<telemetry::StepRecord>& steps) {
  double weight_bytes = 0.0;
  double flops_per_token = 0.0;
  int64_t count = 0;
  for (const telemetry::StepRecord& s : steps) {
    if (!telemetry::is_decode_step(s)) continue;
    weight_bytes += static_cast<double>(s.weight_bytes_read);
    flops_per_token += s.flops / static_cast<double>(s.decode_tokens);
    ++count;
  }
  if (count == 0) return std::nullopt;
  return DecodeStepMeans{weight_bytes / static_cast<double>(count),
                         flops_per_token / static_cast<double>(count)};
}

std::optional<double> fitted_bandwidth_gbs(const std::vector<SizeSweepPoint>& points) {
  const auto bytes_per_ms = fitted_work_per_ms(
      points, [](const SizeSweepPoint& p) { return static_cast<double>(p.weight_bytes); });
  if (!bytes_per_ms) return std::nullopt;
  return *bytes_per_ms / 1e6;  // bytes per ms / 1e6 = GB/s
}

std::optional<double> fitted_gflop_per_s(const std::vector<SizeSweepPoint>& points) {
  const auto flops_per_ms =
      fitted_work_per_ms(points, [](const SizeSweepPoint& p) { return p.decode_flops_per_token; });
  if (!flops_per_ms) return std::nullopt;
  return *flops_per_ms / 1e6;  // FLOPs per ms / 1e6 = GFLOP/s
}

}  // namespace servescope::gui
