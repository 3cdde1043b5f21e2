// The measures of the learner's own request: its times, its KV share, and the decode steps
// its later tokens rode (their FLOPs, bytes and attention), set against the roofs.
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

constexpr const char* kGenerateFirst = "Generate first: it is measured on your request.";

const telemetry::RequestRecord* user_record(const MeasureInputs& in) {
  if (in.user_request < 0) return nullptr;
  for (auto it = in.folder->requests().rbegin(); it != in.folder->requests().rend(); ++it) {
    if (it->request_id == in.user_request) return &*it;
  }
  return nullptr;
}

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
    return missing("ms",
                   "Generate first: it is measured on decode steps whose kernels this "
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
    return missing("ms",
                   "Generate first: it is measured on decode steps whose kernels this "
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

}  // namespace servescope::gui::measure_figures
