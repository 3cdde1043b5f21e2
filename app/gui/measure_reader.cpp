#include "app/gui/measure_reader.h"

#include <functional>
#include <map>

#include "app/gui/main_window.h"
#include "engine/telemetry/metrics.h"

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

MeasureValue roof(const MeasureInputs& in, double EngineInfo::*field, const char* unit) {
  if (!in.engine) return missing(unit, "Load a model first.");
  const double v = in.engine->*field;
  if (v <= 0.0) return missing(unit, "This device's roofs were not measured.");
  return value(v, unit);
}

MeasureValue achieved_gbs(const MeasureInputs& in) {
  double bytes = 0.0;
  double ms = 0.0;
  for (const telemetry::StepRecord& s : in.folder->steps()) {
    if (s.prefill_tokens != 0 || s.decode_tokens == 0 || s.wall_ms <= 0.0) continue;
    bytes += static_cast<double>(s.bytes_moved());
    ms += s.wall_ms;
  }
  if (ms <= 0.0) return missing("GB/s", "Generate first: it is measured on decode steps.");
  return value(bytes / ms / 1e6, "GB/s");
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

MeasureValue sweep_speedup_8(const MeasureInputs& in) {
  double one = 0.0;
  double eight = 0.0;
  for (const BatchSweepPoint& p : *in.batch_sweep) {
    if (p.max_batch == 1) one = p.tokens_per_s();
    if (p.max_batch == 8) eight = p.tokens_per_s();
  }
  if (one <= 0.0 || eight <= 0.0) return missing("x", "Run the batch sweep first.");
  return value(eight / one, "x");
}

using Reader = std::function<MeasureValue(const MeasureInputs&)>;

const std::vector<std::pair<std::string_view, Reader>>& readers() {
  static const std::vector<std::pair<std::string_view, Reader>> list = {
      {"kv_bytes", [](const MeasureInputs& in) { return kv_share(in, false, false); }},
      {"kv_tokens", [](const MeasureInputs& in) { return kv_share(in, false, true); }},
      {"kv_allocated_bytes", [](const MeasureInputs& in) { return kv_share(in, true, false); }},
      {"weight_bytes",
       [](const MeasureInputs& in) {
         if (!in.engine) return missing("bytes", "Load a model first.");
         return value(static_cast<double>(in.engine->weight_bytes), "bytes");
       }},
      {"prefill_ms", [](const MeasureInputs& in) { return from_request(in, "ms", prefill_ms); }},
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
      {"memory_roof_gbs",
       [](const MeasureInputs& in) { return roof(in, &EngineInfo::stream_gb_per_s, "GB/s"); }},
      {"cache_roof_gbs",
       [](const MeasureInputs& in) { return roof(in, &EngineInfo::cache_gb_per_s, "GB/s"); }},
      {"compute_roof_gflops",
       [](const MeasureInputs& in) {
         return roof(in, &EngineInfo::compute_gflop_per_s, "GFLOP/s");
       }},
      {"sweep_speedup_8", sweep_speedup_8},
      {"size_sweep_gbs",
       [](const MeasureInputs& in) {
         const std::optional<double> gbs = fitted_bandwidth_gbs(*in.size_sweep);
         if (!gbs) return missing("GB/s", "Run the size sweep first (two sizes or more).");
         return value(*gbs, "GB/s");
       }},
      {"ttft_ms",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", telemetry::time_to_first_token_ms);
       }},
      {"tpot_ms",
       [](const MeasureInputs& in) {
         return from_request(in, "ms", telemetry::time_per_output_token_ms);
       }},
      {"class_tokens_per_s", class_tokens_per_s},
  };
  return list;
}

}  // namespace

MeasureInputs measure_inputs(const MainWindow& window, const std::vector<SizeSweepPoint>& sizes) {
  MeasureInputs in;
  in.folder = &window.folder();
  in.engine = window.engine_info() ? &*window.engine_info() : nullptr;
  in.user_request = window.user_request();
  in.batch_sweep = &window.batch_sweep();
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
          QString("No measure is called %1.")
              .arg(QString::fromUtf8(name.data(), static_cast<int>(name.size())))};
}

std::optional<double> fitted_bandwidth_gbs(const std::vector<SizeSweepPoint>& points) {
  if (points.size() < 2) return std::nullopt;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (const SizeSweepPoint& p : points) {
    mean_x += static_cast<double>(p.weight_bytes);
    mean_y += p.decode_ms_per_token;
  }
  const auto n = static_cast<double>(points.size());
  mean_x /= n;
  mean_y /= n;
  double sxy = 0.0;
  double sxx = 0.0;
  for (const SizeSweepPoint& p : points) {
    const double dx = static_cast<double>(p.weight_bytes) - mean_x;
    sxy += dx * (p.decode_ms_per_token - mean_y);
    sxx += dx * dx;
  }
  if (sxx <= 0.0 || sxy <= 0.0) return std::nullopt;
  const double ms_per_byte = sxy / sxx;
  return 1.0 / ms_per_byte / 1e6;  // bytes per ms / 1e6 = GB/s
}

}  // namespace servescope::gui
