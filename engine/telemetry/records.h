// Plain records of what one engine step and one request did. The GUI panels, the CLI and the
// benchmarks read these same records; the engine fills the raw fields (counts, bytes,
// timestamps) and never the derived ones, which metrics.h defines, once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace servescope::telemetry {

// Why a request stopped producing tokens: the one name for it in the engine, the scheduler
// and the single-request generator.
enum class FinishReason {
  kNone,  // not finished
  kMaxTokens,
  kStopToken,
  kContextFull,  // reached the model's context length
  kCancelled,    // cancelled from outside (Engine::cancel, Scheduler::finish)
};

// "none", "max_tokens", "stop_token", "context_full", "cancelled".
std::string_view finish_reason_name(FinishReason reason);

// What a sequence does in a step.
enum class SequencePhase {
  kPrefill,    // a chunk of its prompt
  kDecode,     // its one newest token
  kRecompute,  // a chunk of prompt and earlier outputs again, after a preemption
};

// "prefill", "decode", "recompute".
std::string_view sequence_phase_name(SequencePhase phase);

// One sequence's part of a step: a row of the slots x steps heatmap.
struct BatchEntry {
  int64_t sequence = 0;
  // Batch slot in [0, max_batch_size): a request keeps it from admission until it finishes or
  // is preempted (a resumed request may get another one).
  int64_t slot = 0;
  SequencePhase phase = SequencePhase::kPrefill;
  int64_t start_position = 0;     // position of tokens[0]; tokens[i] is at start_position + i
  std::vector<int32_t> tokens{};  // the token ids processed
  int32_t sampled_token = -1;     // the token this step chose for it; -1 when none (mid-prefill)
  // The most tokens the request can hold: its prompt plus max_tokens, capped at the model's
  // context (what a server reserving each request's maximum up front would set aside). 0: not
  // known (a recording does not hold it).
  int64_t longest_tokens = 0;
};

// Time per kernel class of one step, in milliseconds.
struct KernelTimes {
  double matmul_ms = 0.0;
  double attention_ms = 0.0;
  double norm_ms = 0.0;
  double other_ms = 0.0;

  double total_ms() const { return matmul_ms + attention_ms + norm_ms + other_ms; }
};

// The kernel classes of KernelTimes, for one operation.
enum class KernelKind { kMatmul, kAttention, kNorm, kOther };

// "matmul", "attention", "norm", "other".
std::string_view kernel_kind_name(KernelKind kind);

// One backend operation of a step's forward pass (opt-in, EngineConfig::kernel_spans): its
// class, the transformer layer it belongs to (-1 outside the layers: embeddings, the final norm
// and the logits) and when it ran, in milliseconds on the engine clock.
struct KernelSpan {
  KernelKind kind = KernelKind::kOther;
  int64_t layer = -1;
  double start_ms = 0.0;
  double end_ms = 0.0;
};

struct StepRecord {
  int64_t step_index = 0;
  int64_t prefill_tokens = 0;  // prompt tokens processed (chunked prefill included)
  int64_t decode_tokens = 0;   // one per decoding sequence
  int64_t sequences = 0;       // sequences in the batch
  int64_t max_batch_size = 0;  // batch slots the scheduler may fill
  KernelTimes kernel_times;
  uint64_t weight_bytes_read = 0;
  uint64_t kv_bytes_read = 0;
  uint64_t kv_bytes_written = 0;
  double flops = 0.0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;
  double wall_ms = 0.0;  // the whole step, scheduling to sampled tokens (= end_ms - start_ms)

  // The step on the engine clock (Engine::now_ms()) and how its wall time splits; measured.
  // The rest of wall_ms is bookkeeping (completing the step, the records themselves).
  double start_ms = 0.0;
  double end_ms = 0.0;
  double schedule_ms = 0.0;  // choosing the batch and laying out its KV slots
  double forward_ms = 0.0;   // the batched forward pass, logits copied back included
  double sample_ms = 0.0;    // choosing next tokens (and token probabilities, when asked)
  // The first step of an engine whose kernels were not warmed (EngineConfig::warmed_up): its
  // time includes one-off costs, so per-phase speeds leave it out.
  bool cold = false;
  // Whether kernel_times were measured. false: the backend did not time its kernels this step
  // (Vulkan with timestamp queries off, as on CPU devices such as lavapipe), and the zeros in
  // kernel_times mean "not measured", not "took no time".
  bool kernel_times_measured = false;
  // Per-operation spans, in the order they ran, when EngineConfig::kernel_spans asks and the
  // backend times single operations: one per operation on the CPU backend, one per dispatch on
  // Vulkan (timestamp queries). spans_measured stays false otherwise, and spans_note then says
  // why (e.g. a Vulkan device without timestamps on its compute queue); empty when not asked.
  bool spans_measured = false;
  std::vector<KernelSpan> spans{};
  std::string spans_note{};

  std::vector<BatchEntry> batch{};   // decodes first, then prefill chunks (the scheduler's order)
  std::vector<int64_t> admitted{};   // requests admitted or resumed in this step
  std::vector<int64_t> preempted{};  // requests that lost their KV blocks in this step
  std::vector<int64_t> finished{};   // requests that finished in this step

  int64_t tokens() const { return prefill_tokens + decode_tokens; }
  uint64_t bytes_moved() const { return weight_bytes_read + kv_bytes_read + kv_bytes_written; }
};

// A request as it joined the engine's queue, before any step ran it: a view of each request's
// life needs its wait while it waits (its RequestRecord comes only when it leaves).
struct RequestArrival {
  int64_t request_id = 0;
  int64_t prompt_tokens = 0;
  double arrival_ms = 0.0;  // on the engine clock, as RequestRecord::arrival_ms
};

// Timestamps in milliseconds on one steady clock (any epoch, the same for all fields).
struct RequestRecord {
  int64_t request_id = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache
  int64_t preemptions = 0;
  double arrival_ms = 0.0;             // submitted
  double first_scheduled_ms = 0.0;     // first step that processed any of its tokens
  std::vector<double> token_times_ms;  // when each output token was produced
  FinishReason finish_reason = FinishReason::kNone;
  std::vector<int32_t> output_ids{};  // every output token, the stop token included
  double finished_ms = 0.0;           // when it left the engine
};

// One alternative for a generated token's position.
struct TokenAlternative {
  int32_t id = 0;
  double prob = 0.0;  // under the model's softmax at temperature 1
};

// One generated token with its probabilities (opt-in per request, EngineRequest::
// top_k_alternatives). Pieces are the tokenizer's to add: the engine works on ids.
struct TokenRecord {
  int64_t request_id = 0;
  int64_t step_index = 0;
  int64_t position = 0;      // its position in the sequence (prompt length + output index)
  int64_t output_index = 0;  // 0 for the first generated token
  int32_t id = 0;
  double prob = 0.0;  // softmax of the logits at temperature 1
  // Under the distribution the sampler actually drew from (temperature, top-k, top-p, then
  // renormalised); 1 for greedy decoding.
  double sampling_prob = 0.0;
  std::vector<TokenAlternative> top{};  // the K most likely at temperature 1, most likely first
  double time_ms = 0.0;                 // engine clock, the end of its step
};

}  // namespace servescope::telemetry
