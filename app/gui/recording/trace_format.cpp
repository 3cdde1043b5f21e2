#include "app/gui/recording/trace_format.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace servescope::gui {
namespace {

using Json = nlohmann::ordered_json;

// --- each struct's fields, named once for writing and reading ------------------------------
// `field(name, member)` is called for every member; the writer and the reader pass their own
// `field`, so the two cannot disagree on a name or forget a member.

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::KernelTimes>
{
  field("matmul_ms", s.matmul_ms);
  field("attention_ms", s.attention_ms);
  field("norm_ms", s.norm_ms);
  field("other_ms", s.other_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::KernelSpan>
{
  field("kind", s.kind);
  field("layer", s.layer);
  field("start_ms", s.start_ms);
  field("end_ms", s.end_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::BatchEntry>
{
  field("sequence", s.sequence);
  field("slot", s.slot);
  field("phase", s.phase);
  field("start_position", s.start_position);
  field("tokens", s.tokens);
  field("sampled_token", s.sampled_token);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::StepRecord>
{
  field("step_index", s.step_index);
  field("prefill_tokens", s.prefill_tokens);
  field("decode_tokens", s.decode_tokens);
  field("sequences", s.sequences);
  field("max_batch_size", s.max_batch_size);
  field("kernel_times", s.kernel_times);
  field("weight_bytes_read", s.weight_bytes_read);
  field("kv_bytes_read", s.kv_bytes_read);
  field("kv_bytes_written", s.kv_bytes_written);
  field("flops", s.flops);
  field("kv_blocks_used", s.kv_blocks_used);
  field("kv_blocks_free", s.kv_blocks_free);
  field("wall_ms", s.wall_ms);
  field("start_ms", s.start_ms);
  field("end_ms", s.end_ms);
  field("schedule_ms", s.schedule_ms);
  field("forward_ms", s.forward_ms);
  field("sample_ms", s.sample_ms);
  field("cold", s.cold);
  field("kernel_times_measured", s.kernel_times_measured);
  field("spans_measured", s.spans_measured);
  field("spans", s.spans);
  field("spans_note", s.spans_note);
  field("batch", s.batch);
  field("admitted", s.admitted);
  field("preempted", s.preempted);
  field("finished", s.finished);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::RequestRecord>
{
  field("request_id", s.request_id);
  field("prompt_tokens", s.prompt_tokens);
  field("cached_prompt_tokens", s.cached_prompt_tokens);
  field("preemptions", s.preemptions);
  field("arrival_ms", s.arrival_ms);
  field("first_scheduled_ms", s.first_scheduled_ms);
  field("token_times_ms", s.token_times_ms);
  field("finish_reason", s.finish_reason);
  field("output_ids", s.output_ids);
  field("finished_ms", s.finished_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::TokenAlternative>
{
  field("id", s.id);
  field("prob", s.prob);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::TokenRecord>
{
  field("request_id", s.request_id);
  field("step_index", s.step_index);
  field("position", s.position);
  field("output_index", s.output_index);
  field("id", s.id);
  field("prob", s.prob);
  field("sampling_prob", s.sampling_prob);
  field("top", s.top);
  field("time_ms", s.time_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::KvEvent>
{
  field("kind", s.kind);
  field("sequence", s.sequence);
  field("blocks", s.blocks);
  field("tokens", s.tokens);
  field("blocks_used_after", s.blocks_used_after);
  field("position", s.position);
  field("offset", s.offset);
  field("step_index", s.step_index);
  field("time_ms", s.time_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, BatchingChoice>
{
  field("static_batches", s.static_batches);
  field("wait_ms", s.wait_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, BatchCollecting>
{
  field("waiting", s.waiting);
  field("batch_size", s.batch_size);
  field("due_in_ms", s.due_in_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, telemetry::StepTotals>
{
  field("steps", s.steps);
  field("tokens", s.tokens);
  field("step_ms", s.step_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, BatchSweepPoint>
{
  field("max_batch", s.max_batch);
  field("decode", s.decode);
  field("fastest_step_ms", s.fastest_step_ms);
  field("slowest_step_ms", s.slowest_step_ms);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, compute::StepRoofs>
{
  field("cache_gb_per_s", s.cache_gb_per_s);
  field("memory_gb_per_s", s.memory_gb_per_s);
  field("compute_gflop_per_s", s.compute_gflop_per_s);
  field("cache_bytes", s.cache_bytes);
  field("cache_raised", s.cache_raised);
  field("memory_raised", s.memory_raised);
  field("compute_raised", s.compute_raised);
  field("cache_raised_by", s.cache_raised_by);
  field("memory_raised_by", s.memory_raised_by);
  field("compute_raised_by", s.compute_raised_by);
}

template <typename F, typename S>
void describe(F& field, S& s)
  requires std::is_same_v<std::remove_const_t<S>, EngineInfo>
{
  field("model_path", s.model_path);
  field("model_name", s.model_name);
  field("weight_type", s.weight_type);
  field("architecture", s.architecture);
  field("provenance", s.provenance);
  field("backend", s.backend);
  field("device", s.device);
  field("driver", s.driver);
  field("quantised_activations", s.quantised_activations);
  field("vulkan_device", s.vulkan_device);
  field("random_weights", s.random_weights);
  field("parameters", s.parameters);
  field("weight_bytes", s.weight_bytes);
  field("context_length", s.context_length);
  field("n_layers", s.n_layers);
  field("n_heads", s.n_heads);
  field("n_kv_heads", s.n_kv_heads);
  field("head_dim", s.head_dim);
  field("vocab_size", s.vocab_size);
  field("ffn_dim", s.ffn_dim);
  field("tensor_types", s.tensor_types);
  field("kv_type", s.kv_type);
  field("kv_blocks", s.kv_blocks);
  field("block_size", s.block_size);
  field("kv_bytes_per_block", s.kv_bytes_per_block);
  field("kv_bytes_per_token", s.kv_bytes_per_token);
  field("kv_bytes_total", s.kv_bytes_total);
  field("max_batch_size", s.max_batch_size);
  field("warm_up_ms", s.warm_up_ms);
  field("batching", s.batching);
  field("keep_kv", s.keep_kv);
  field("memory_weights_bytes", s.memory_weights_bytes);
  field("memory_kv_bytes", s.memory_kv_bytes);
  field("memory_working_bytes", s.memory_working_bytes);
  field("roofs", s.roofs);
  field("bos_id", s.bos_id);
  field("eos_id", s.eos_id);
}

// Whether T has a field list above (probed with a do-nothing field).
struct NoField {
  template <typename V>
  void operator()(const char*, V&) {}
};
template <typename T>
concept HasFields = requires(NoField f, T& t) { describe(f, t); };

// --- enums, by name ---------------------------------------------------------------------------

// count: the enum's values, 0 .. count - 1 (kept in step with the enum; gui_trace_test walks
// every value through a round trip).
template <typename E>
struct EnumNames;
template <>
struct EnumNames<telemetry::KvEventKind> {
  static constexpr int count = 8;
  static std::string_view name(telemetry::KvEventKind e) { return telemetry::kv_event_kind_name(e); }
};
template <>
struct EnumNames<telemetry::SequencePhase> {
  static constexpr int count = 3;
  static std::string_view name(telemetry::SequencePhase e) {
    return telemetry::sequence_phase_name(e);
  }
};
template <>
struct EnumNames<telemetry::FinishReason> {
  static constexpr int count = 5;
  static std::string_view name(telemetry::FinishReason e) {
    return telemetry::finish_reason_name(e);
  }
};
template <>
struct EnumNames<telemetry::KernelKind> {
  static constexpr int count = 4;
  static std::string_view name(telemetry::KernelKind e) { return telemetry::kernel_kind_name(e); }
};
template <>
struct EnumNames<gguf::GgmlType> {
  static constexpr int count = 64;  // GGML's type ids are below this; gaps name "unknown"
  static std::string_view name(gguf::GgmlType e) { return gguf::type_name(e); }
};

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
                                                                        : "token";
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
    refuse(path, "expected one of {\"step\":...}, {\"request\":...}, {\"kv\":...}, {\"token\":...}");
  }
  const std::string key = j.begin().key();
  if (key == "step") return decoded<telemetry::StepRecord>(j, "step", path);
  if (key == "request") return decoded<telemetry::RequestRecord>(j, "request", path);
  if (key == "kv") return decoded<telemetry::KvEvent>(j, "kv", path);
  if (key == "token") return decoded<telemetry::TokenRecord>(j, "token", path);
  refuse(path, "'" + key + "' is not a record (step, request, kv or token)");
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
  if (kind == "generation_started") {
    return trace::GenerationStarted{decoded<int64_t>(j, "request", path),
                                    decoded<int>(j, "prompt_tokens", path)};
  }
  if (kind == "generation_finished") {
    const std::string reason = decoded<std::string>(j, "reason", path);
    const std::optional<GenerationEnd> end =
        parse_generation_end(QString::fromStdString(reason));
    if (!end) refuse(path + ".reason", "'" + reason + "' is not a reason a generation ends for");
    return trace::GenerationFinished{*end};
  }
  if (kind == "lesson") {
    return trace::LessonShown{decoded<std::string>(j, "lesson", path),
                              decoded<std::string>(j, "step", path)};
  }
  refuse("event.kind", "'" + kind + "' is not an event kind of format version " +
                           std::to_string(kTraceVersion));
}

Json parsed(std::string_view line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw TraceFormatError("not a JSON line");
  if (!j.is_object()) throw TraceFormatError("expected a JSON object, found " + json_kind(j));
  return j;
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

TraceHeader decode_header(std::string_view line) {
  Json j;
  try {
    j = parsed(line);
  } catch (const TraceFormatError&) {
    throw TraceFormatError(std::string("not a ServeScope trace (its first line is not {\"format\":\"") +
                           std::string(kTraceFormat) + "\",...})");
  }
  if (j.value("format", std::string()) != kTraceFormat) {
    throw TraceFormatError("not a ServeScope trace (its first line does not say \"format\":\"" +
                           std::string(kTraceFormat) + "\")");
  }
  TraceHeader header;
  header.version = decoded<int>(j, "version", "header");
  if (header.version > kTraceVersion || header.version < 1) {
    throw TraceFormatError("format version " + std::to_string(header.version) +
                           " is not one this ServeScope reads (version 1 to " +
                           std::to_string(kTraceVersion) +
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
  if (events < 0) throw TraceFormatError("end.events: expected 0 or more, found " + std::to_string(events));
  return events;
}

}  // namespace servescope::gui
