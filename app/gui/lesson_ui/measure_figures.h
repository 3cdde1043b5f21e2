// The figures the measure table (measure_reader.cpp) reads, in two groups: the learner's own
// request (measure_request_figures.cpp) and the experiments a lesson runs
// (measure_experiment_figures.cpp). Internal to app/gui/lesson_ui: lessons read measures by
// name through read_measure.
#pragma once

#include <QString>
#include <cstdint>
#include <functional>
#include <optional>

#include "app/gui/lesson_ui/measure_reader.h"
#include "engine/telemetry/records.h"

namespace servescope::gui::measure_figures {

inline MeasureValue value(double v, const char* unit) { return {v, unit, {}}; }
inline MeasureValue missing(const char* unit, const QString& why) {
  return {std::nullopt, unit, why};
}

// --- the learner's request ----------------------------------------------------------------

// Sums over the decode steps (telemetry::is_decode_step: no prompt tokens riding along) that
// made the learner's later tokens, with how many there were.
struct RodeSums {
  int64_t steps = 0;
  double flops = 0.0;
  double bytes = 0.0;  // moved: weights and KV read, KV written
  double weight_bytes_read = 0.0;
  double kv_bytes_read = 0.0;
  double step_ms = 0.0;
};

// A figure of the user's finished request; `figure` returns <= 0 when it is not defined.
MeasureValue from_request(const MeasureInputs& in, const char* unit,
                          const std::function<double(const telemetry::RequestRecord&)>& figure);
double prefill_ms(const telemetry::RequestRecord& r);
MeasureValue kv_share(const MeasureInputs& in, bool allocated, bool tokens);
// The roofs the roofline draws: the probe's raised by the steps that beat them.
MeasureValue roof(const MeasureInputs& in, double compute::StepRoofs::*field, const char* unit);
MeasureValue working_set_roof_gbs(const MeasureInputs& in);
MeasureValue attention_ms_per_100_context(const MeasureInputs& in);
MeasureValue decode_attention_ms(const MeasureInputs& in);
MeasureValue class_tokens_per_s(const MeasureInputs& in);
MeasureValue decode_flops_per_byte(const MeasureInputs& in);
// One of RodeSums' totals per step: the mean over the decode steps the learner's tokens rode.
MeasureValue per_rode_step(const MeasureInputs& in, double RodeSums::*total, const char* unit);
MeasureValue achieved_gbs(const MeasureInputs& in);

// --- the experiments ----------------------------------------------------------------------

// Paging against reserving each request's maximum length, at the experiment's busiest step:
// the step that ran the most requests, and of those the one whose blocks held the most (the
// fullest the paged pool was at that batch, the case kindest to reservation). Counts only, so
// the figures are the same on every machine that schedules the same way.
struct ReservationComparison {
  int64_t requests = 0;         // requests that ran in that step
  double paged_bytes = 0.0;     // the pool's blocks in use x bytes per block
  double reserved_bytes = 0.0;  // requests x the model's context x bytes per token
  int64_t full_contexts = 0;    // whole-context reservations the same pool holds
};

MeasureValue sweep_speedup(const MeasureInputs& in, int64_t batch);
MeasureValue sweep_ms_per_1k_tokens(const MeasureInputs& in, int64_t batch);
MeasureValue sweep_step_ms(const MeasureInputs& in, int64_t batch);
// A figure of the last staggered load's summary; none before one ran to its end.
MeasureValue from_staggered_load(const MeasureInputs& in, const char* unit,
                                 double (*figure)(const StaggeredLoadResult&));
MeasureValue kv_events_since(const MeasureInputs& in, telemetry::KvEventKind kind,
                             const char* unit);
// How many requests the pool holds when each reserves the model's whole context up front.
int64_t full_context_reservations(const EngineInfo& e);
MeasureValue from_reservation(const MeasureInputs& in, const char* unit,
                              const std::function<double(const ReservationComparison&)>& figure);
MeasureValue all_points_under_roofs(const MeasureInputs& in);
MeasureValue from_variant(const MeasureInputs& in, const char* unit,
                          const std::function<double(const eval::VariantReport&)>& figure);
// A layer's SQNR of the lab's Q8_0 KV cache (first or last layer; its own rounding alone or
// the cache as stored).
MeasureValue kv_sqnr(const MeasureInputs& in, bool last, bool rounding_only);

}  // namespace servescope::gui::measure_figures
