// Writing a trace: the header, each event and the end line as one JSON object a line.
#include <cmath>
#include <limits>
#include <type_traits>

#include "app/gui/recording/trace_fields.h"
#include "app/gui/recording/trace_format.h"

namespace servescope::gui {
namespace {

using namespace trace_fields;

// --- writing ----------------------------------------------------------------------------------

template <typename T>
Json encode(const T& value);

struct FieldWriter {
  Json& out;
  template <typename V>
  void operator()(const char* name, const V& value) {
    out[name] = encode(value);
  }
};

template <typename T>
Json encode(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(EnumNames<T>::name(value));
  } else if constexpr (std::is_integral_v<T>) {
    return value;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, QString>) {
    return value.toStdString();
  } else if constexpr (HasFields<T>) {
    Json out = Json::object();
    FieldWriter writer{out};
    describe(writer, value);
    return out;
  } else {  // std::vector or QVector
    Json out = Json::array();
    for (const auto& item : value) out.push_back(encode(item));
    return out;
  }
}

Json encode_item(const telemetry::TelemetryItem& item) {
  return std::visit(
      [](const auto& record) -> Json {
        using R = std::decay_t<decltype(record)>;
        const char* key = std::is_same_v<R, telemetry::StepRecord>      ? "step"
                          : std::is_same_v<R, telemetry::RequestRecord> ? "request"
                          : std::is_same_v<R, telemetry::KvEvent>       ? "kv"
                          : std::is_same_v<R, telemetry::TokenRecord>   ? "token"
                                                                        : "arrival";
        return Json{{key, encode(record)}};
      },
      item);
}

// The event's kind and fields, added to `out`.
void encode_body(const TraceBody& body, Json& out) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, trace::Engine>) {
          out["kind"] = "engine";
          out["info"] = encode(e.info);
        } else if constexpr (std::is_same_v<E, trace::Telemetry>) {
          out["kind"] = "telemetry";
          Json items = Json::array();
          for (const telemetry::TelemetryItem& item : e.items) items.push_back(encode_item(item));
          out["items"] = std::move(items);
        } else if constexpr (std::is_same_v<E, trace::Memory>) {
          out["kind"] = "memory";
          out["weights"] = e.weights;
          out["kv_cache"] = e.kv_cache;
          out["working"] = e.working;
        } else if constexpr (std::is_same_v<E, trace::SweepPoint>) {
          out["kind"] = "sweep_point";
          out["point"] = encode(e.point);
        } else if constexpr (std::is_same_v<E, trace::SweepDone>) {
          out["kind"] = "sweep_done";
          out["points"] = encode(e.points);
        } else if constexpr (std::is_same_v<E, trace::Batching>) {
          out["kind"] = "batching";
          out["choice"] = encode(e.choice);
        } else if constexpr (std::is_same_v<E, trace::Collecting>) {
          out["kind"] = "collecting";
          out["state"] = encode(e.state);
        } else if constexpr (std::is_same_v<E, trace::PromptPrefill>) {
          out["kind"] = "prompt_prefill";
          out["request"] = e.request;
        } else if constexpr (std::is_same_v<E, trace::GenerationStarted>) {
          out["kind"] = "generation_started";
          out["request"] = e.request;
          out["prompt_tokens"] = e.prompt_tokens;
        } else if constexpr (std::is_same_v<E, trace::SampleStarted>) {
          out["kind"] = "sample_started";
          out["request"] = e.request;
        } else if constexpr (std::is_same_v<E, trace::GenerationFinished>) {
          out["kind"] = "generation_finished";
          out["reason"] = generation_end_name(e.end).toStdString();
        } else {
          static_assert(std::is_same_v<E, trace::LessonShown>);
          out["kind"] = "lesson";
          out["lesson"] = e.lesson;
          out["step"] = e.step;
        }
      },
      body);
}
}  // namespace

std::string encode_header(const TraceHeader& header) {
  Json j;
  j["format"] = kTraceFormat;
  j["version"] = header.version;
  j["recorded_at"] = header.recorded_at;
  return j.dump();
}

std::string encode_event(const TraceEvent& event) {
  Json j;
  j["ms"] = encode(event.ms);
  encode_body(event.body, j);
  return j.dump();
}

std::string encode_end(int64_t events) {
  Json j;
  j["end"] = true;
  j["events"] = events;
  return j.dump();
}

}  // namespace servescope::gui
