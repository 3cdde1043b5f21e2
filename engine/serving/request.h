// A request as the scheduler tracks it: its tokens so far, how many have KV computed, and why it
// stopped. Plain data; the Scheduler is the only writer.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/serving/kv_block_pool.h"
#include "engine/telemetry/records.h"

namespace servescope::serving {

// What the scheduler needs of a request: its tokens and when it stops. The engine's
// EngineRequest extends it with sampling; Sequence is the scheduler's running state of one.
struct Request {
  std::vector<int32_t> prompt_ids;
  int64_t max_tokens = 64;  // output tokens, at least 1
  int32_t stop_token = -1;  // usually EOS; -1 = never stop early
};

enum class SequenceStatus { kWaiting, kRunning, kFinished };

using telemetry::finish_reason_name;
using telemetry::FinishReason;

struct Sequence {
  SequenceId id = 0;
  std::vector<int32_t> tokens;  // prompt, then every output token
  int64_t prompt_length = 0;
  int64_t max_tokens = 0;
  int32_t stop_token = -1;
  SequenceStatus status = SequenceStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  // Tokens whose KV is in the cache. Tokens [computed, size) are processed by the next steps.
  int64_t computed_tokens = 0;
  // Tokens known when it was last admitted (the prompt, or prompt and outputs after a
  // preemption): steps before this point are prefill, after it decode.
  int64_t prefill_end = 0;

  // Batch slot while running (kept until it finishes or is preempted); -1 while waiting.
  int64_t batch_slot = -1;

  // Samples of one prompt (Scheduler::submit_samples): the first sample computes the prompt;
  // the others wait, in `samples_to_fork`, until its logits exist, then each takes its own
  // token from them and shares the prompt's blocks (KvBlockPool::fork). sample_of: the
  // sequence a waiting sample forks from (-1: none, or forked already).
  std::vector<SequenceId> samples_to_fork;
  SequenceId sample_of = -1;

  int64_t cached_prompt_tokens = 0;  // prefix-cache hits at its first admission (or shared)
  int64_t preemptions = 0;
  int64_t arrival_order = 0;  // submission index: FCFS order
  double arrival_ms = 0.0;    // on the scheduler's caller's clock (static batching waits from it)
  int64_t first_scheduled_step = -1;
  int64_t first_token_step = -1;
  int64_t finished_step = -1;

  int64_t output_length() const { return static_cast<int64_t>(tokens.size()) - prompt_length; }
  std::vector<int32_t> output_ids() const { return {tokens.begin() + prompt_length, tokens.end()}; }
};

}  // namespace servescope::serving
