// Reading a trace: every line checked against the format, a bad one refused with the path of
// the field at fault (TraceFormatError), never half-read.
#include <cmath>
#include <limits>
#include <type_traits>

#include "app/gui/recording/trace_fields.h"
#include "app/gui/recording/trace_format.h"

namespace servescope::gui {
namespace {

using namespace trace_fields;

// --- reading ----------------------------------------------------------------------------------

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw TraceFormatError(path + ": " + what);
}

std::string json_kind(const Json& j) { return j.type_name(); }

const Json& member(const Json& object, const char* name, const std::string& path) {
  if (!object.is_object()) refuse(path, "expected an object, found " + json_kind(object));
  const auto it = object.find(name);
  if (it == object.end()) refuse(path, std::string("the field '") + name + "' is missing");
  return *it;
}

template <typename T>
void decode(const Json& j, T& out, const std::string& path);

struct FieldReader {
  const Json& in;
  const std::string& path;
  template <typename V>
  void operator()(const char* name, V& value) {
    decode(member(in, name, path), value, path + "." + name);
  }
};

template <typename T>
void decode_integer(const Json& j, T& out, const std::string& path) {
  using Limits = std::numeric_limits<T>;
  const auto out_of_range = [&] {
    refuse(path, "expected a whole number from " + std::to_string(Limits::min()) + " to " +
                     std::to_string(Limits::max()) + ", found " + j.dump());
  };
  if (!j.is_number_integer()) out_of_range();
  if (j.is_number_unsigned()) {
    const auto value = j.get<uint64_t>();
    if (value > static_cast<uint64_t>(Limits::max())) out_of_range();
    out = static_cast<T>(value);
  } else {
    const auto value = j.get<int64_t>();
    if (value < static_cast<int64_t>(Limits::min()) ||
        (value > 0 && static_cast<uint64_t>(value) > static_cast<uint64_t>(Limits::max()))) {
      out_of_range();
    }
    out = static_cast<T>(value);
  }
}

template <typename E>
void decode_enum(const Json& j, E& out, const std::string& path) {
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    for (int i = 0; i < EnumNames<E>::count; ++i) {
      const auto value = static_cast<E>(i);
      if (EnumNames<E>::name(value) == name && name != "unknown") {
        out = value;
        return;
      }
    }
  }
  std::string names;
  for (int i = 0; i < EnumNames<E>::count && names.size() < 200; ++i) {
    const std::string_view name = EnumNames<E>::name(static_cast<E>(i));
    if (name != "unknown") names += (names.empty() ? "" : ", ") + std::string(name);
  }
  refuse(path, j.dump() + " is not one of " + names);
}

template <typename T>
void decode(const Json& j, T& out, const std::string& path) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) refuse(path, "expected true or false, found " + j.dump());
    out = j.get<bool>();
  } else if constexpr (std::is_enum_v<T>) {
    decode_enum(j, out, path);
  } else if constexpr (std::is_integral_v<T>) {
    decode_integer(j, out, path);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (j.is_number()) {
      out = j.get<double>();
    } else if (j == "inf" || j == "-inf" || j == "nan") {
      const std::string text = j.get<std::string>();
      out = text == "nan" ? std::numeric_limits<T>::quiet_NaN()
                          : (text == "inf" ? 1 : -1) * std::numeric_limits<T>::infinity();
    } else {
      refuse(path, "expected a number, found " + j.dump());
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) refuse(path, "expected text, found " + json_kind(j));
    out = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, QString>) {
    if (!j.is_string()) refuse(path, "expected text, found " + json_kind(j));
    out = QString::fromStdString(j.get<std::string>());
  } else if constexpr (HasFields<T>) {
    if (!j.is_object()) refuse(path, "expected an object, found " + json_kind(j));
    FieldReader reader{j, path};
    describe(reader, out);
  } else {  // std::vector or QVector
    if (!j.is_array()) refuse(path, "expected a list, found " + json_kind(j));
    out.clear();
    out.reserve(static_cast<decltype(out.size())>(j.size()));
    for (size_t i = 0; i < j.size(); ++i) {
      typename T::value_type item{};
      decode(j[i], item, path + "[" + std::to_string(i) + "]");
      out.push_back(std::move(item));
    }
  }
}

template <typename T>
T decoded(const Json& object, const char* name, const std::string& path) {
  T value{};
  decode(member(object, name, path), value, path + "." + name);
  return value;
}

telemetry::TelemetryItem decode_item(const Json& j, const std::string& path) {
  if (!j.is_object() || j.size() != 1) {
    refuse(path,
           "expected one of {\"step\":...}, {\"request\":...}, {\"kv\":...}, {\"token\":...}, "
           "{\"arrival\":...}");
  }
  const std::string key = j.begin().key();
  if (key == "step") return decoded<telemetry::StepRecord>(j, "step", path);
  if (key == "request") return decoded<telemetry::RequestRecord>(j, "request", path);
  if (key == "kv") return decoded<telemetry::KvEvent>(j, "kv", path);
  if (key == "token") return decoded<telemetry::TokenRecord>(j, "token", path);
  if (key == "arrival") return decoded<telemetry::RequestArrival>(j, "arrival", path);
  refuse(path, "'" + key + "' is not a record (step, request, kv, token or arrival)");
}

TraceBody decode_body(const Json& j) {
  const std::string kind = decoded<std::string>(j, "kind", "event");
  const std::string path = kind;
  if (kind == "engine") return trace::Engine{decoded<EngineInfo>(j, "info", path)};
  if (kind == "telemetry") {
    const Json& items = member(j, "items", path);
    if (!items.is_array()) refuse(path + ".items", "expected a list, found " + json_kind(items));
    trace::Telemetry t;
    for (size_t i = 0; i < items.size(); ++i) {
      t.items.push_back(decode_item(items[i], path + ".items[" + std::to_string(i) + "]"));
    }
    return t;
  }
  if (kind == "memory") {
    return trace::Memory{decoded<uint64_t>(j, "weights", path),
                         decoded<uint64_t>(j, "kv_cache", path),
                         decoded<uint64_t>(j, "working", path)};
  }
  if (kind == "sweep_point") return trace::SweepPoint{decoded<BatchSweepPoint>(j, "point", path)};
  if (kind == "sweep_done") {
    return trace::SweepDone{decoded<QVector<BatchSweepPoint>>(j, "points", path)};
  }
  if (kind == "batching") return trace::Batching{decoded<BatchingChoice>(j, "choice", path)};
  if (kind == "collecting") return trace::Collecting{decoded<BatchCollecting>(j, "state", path)};
  if (kind == "prompt_prefill") return trace::PromptPrefill{decoded<int64_t>(j, "request", path)};
  if (kind == "sample_started") return trace::SampleStarted{decoded<int64_t>(j, "request", path)};
  if (kind == "generation_started") {
    return trace::GenerationStarted{decoded<int64_t>(j, "request", path),
                                    decoded<int>(j, "prompt_tokens", path)};
  }
  if (kind == "generation_finished") {
    const std::string reason = decoded<std::string>(j, "reason", path);
    const std::optional<GenerationEnd> end = parse_generation_end(QString::fromStdString(reason));
    if (!end) refuse(path + ".reason", "'" + reason + "' is not a reason a generation ends for");
    return trace::GenerationFinished{*end};
  }
  if (kind == "lesson") {
    return trace::LessonShown{decoded<std::string>(j, "lesson", path),
                              decoded<std::string>(j, "step", path)};
  }
  refuse("event.kind",
         "'" + kind + "' is not an event kind of format version " + std::to_string(kTraceVersion));
}

Json parsed(std::string_view line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw TraceFormatError("not a JSON line");
  if (!j.is_object()) throw TraceFormatError("expected a JSON object, found " + json_kind(j));
  return j;
}
}  // namespace

TraceHeader decode_header(std::string_view line) {
  Json j;
  try {
    j = parsed(line);
  } catch (const TraceFormatError&) {
    throw TraceFormatError(
        std::string("not a ServeScope trace (its first line is not {\"format\":\"") +
        std::string(kTraceFormat) + "\",...})");
  }
  if (j.value("format", std::string()) != kTraceFormat) {
    throw TraceFormatError("not a ServeScope trace (its first line does not say \"format\":\"" +
                           std::string(kTraceFormat) + "\")");
  }
  TraceHeader header;
  header.version = decoded<int>(j, "version", "header");
  if (header.version > kTraceVersion || header.version < 1) {
    throw TraceFormatError(
        "format version " + std::to_string(header.version) +
        " is not one this ServeScope reads (version 1 to " + std::to_string(kTraceVersion) +
        (header.version > kTraceVersion ? "; it was written by a newer one)" : ")"));
  }
  header.recorded_at = decoded<std::string>(j, "recorded_at", "header");
  return header;
}

TraceEvent decode_event(std::string_view line) {
  const Json j = parsed(line);
  TraceEvent event;
  event.ms = decoded<double>(j, "ms", "event");
  if (!std::isfinite(event.ms) || event.ms < 0.0) {
    throw TraceFormatError("event.ms: expected a time of 0 ms or more, found " + j["ms"].dump());
  }
  event.body = decode_body(j);
  return event;
}

std::optional<int64_t> decode_end(std::string_view line) {
  const Json j = Json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("end")) return std::nullopt;
  const int64_t events = decoded<int64_t>(j, "events", "end");
  if (events < 0)
    throw TraceFormatError("end.events: expected 0 or more, found " + std::to_string(events));
  return events;
}

}  // namespace servescope::gui
