// The trace format's field lists, shared by its writer (trace_encode.cpp) and reader
// (trace_decode.cpp): each struct's members and each enum's names are written once here, so
// the two sides cannot disagree on a name or forget a member. Internal to app/gui/recording.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <type_traits>

#include "app/gui/recording/trace_format.h"

namespace servescope::gui::trace_fields {

using Json = nlohmann::ordered_json;

// --- each struct's fields, named once for writing and reading ------------------------------
// `field(name, member)` is called for every member; the writer and the reader pass their own
// `field`, so the two cannot disagree on a name or forget a member.

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::KernelTimes> {
  field("matmul_ms", s.matmul_ms);
  field("attention_ms", s.attention_ms);
  field("norm_ms", s.norm_ms);
  field("other_ms", s.other_ms);
}

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::KernelSpan> {
  field("kind", s.kind);
  field("layer", s.layer);
  field("start_ms", s.start_ms);
  field("end_ms", s.end_ms);
}

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::BatchEntry> {
  field("sequence", s.sequence);
  field("slot", s.slot);
  field("phase", s.phase);
  field("start_position", s.start_position);
  field("tokens", s.tokens);
  field("sampled_token", s.sampled_token);
}

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::StepRecord> {
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
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::RequestRecord> {
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
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::TokenAlternative> {
  field("id", s.id);
  field("prob", s.prob);
}

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::TokenRecord> {
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
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::RequestArrival> {
  field("request_id", s.request_id);
  field("prompt_tokens", s.prompt_tokens);
  field("arrival_ms", s.arrival_ms);
}

template <typename F, typename S>
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::KvEvent> {
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
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, BatchingChoice> {
  field("static_batches", s.static_batches);
  field("wait_ms", s.wait_ms);
}

template <typename F, typename S>
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, BatchCollecting> {
  field("waiting", s.waiting);
  field("batch_size", s.batch_size);
  field("due_in_ms", s.due_in_ms);
}

template <typename F, typename S>
void describe(F& field,
              S& s) requires std::is_same_v<std::remove_const_t<S>, telemetry::StepTotals> {
  field("steps", s.steps);
  field("tokens", s.tokens);
  field("step_ms", s.step_ms);
}

template <typename F, typename S>
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, BatchSweepPoint> {
  field("max_batch", s.max_batch);
  field("decode", s.decode);
  field("fastest_step_ms", s.fastest_step_ms);
  field("slowest_step_ms", s.slowest_step_ms);
}

template <typename F, typename S>
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, compute::StepRoofs> {
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
void describe(F& field, S& s) requires std::is_same_v<std::remove_const_t<S>, EngineInfo> {
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
concept HasFields = requires(NoField f, T& t) {
  describe(f, t);
};

// --- enums, by name ---------------------------------------------------------------------------

// count: the enum's values, 0 .. count - 1 (kept in step with the enum; gui_trace_test walks
// every value through a round trip).
template <typename E>
struct EnumNames;
template <>
struct EnumNames<telemetry::KvEventKind> {
  static constexpr int count = telemetry::kKvEventKinds;
  static std::string_view name(telemetry::KvEventKind e) {
    return telemetry::kv_event_kind_name(e);
  }
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

}  // namespace servescope::gui::trace_fields
