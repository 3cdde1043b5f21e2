// The measures of the experiments a lesson runs: the batch sweep, a staggered load, KV
// events, paging against reservation, the roofline's points, and the quantisation lab.
#include <QCoreApplication>
#include <algorithm>
#include <functional>
#include <map>

#include "app/gui/engine_bridge/measured_roofs.h"
#include "app/gui/lesson_ui/measure_figures.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/records.h"
#include "widgets/roofline_panel.h"

namespace servescope::gui::measure_figures {

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
  c.reserved_bytes = static_cast<double>(peak->sequences) * static_cast<double>(e.context_length) *
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

}  // namespace servescope::gui::measure_figures
