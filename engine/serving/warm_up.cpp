#include "engine/serving/warm_up.h"

#include <algorithm>
#include <chrono>

namespace servescope::serving {
namespace {

constexpr int64_t kLongPrompt = 48;  // above 32 rows: the CPU's panel products run too
constexpr int64_t kShortPrompt = 5;
constexpr int64_t kOutputTokens = 3;

EngineRequest warm_up_request(int64_t prompt_length, int32_t first_id, int64_t vocab) {
  EngineRequest request;
  for (int64_t i = 0; i < prompt_length; ++i) {
    request.prompt_ids.push_back(static_cast<int32_t>((first_id + 7 * i) % vocab));
  }
  request.max_tokens = kOutputTokens;
  request.stop_token = -1;  // the same number of steps whatever is sampled
  request.sampling.greedy = true;
  return request;
}

}  // namespace

WarmUpResult warm_up(model::Transformer& transformer, uint64_t weight_bytes,
                     const EngineConfig& like) {
  const auto start = std::chrono::steady_clock::now();
  const model::ModelConfig& model = transformer.config();
  const int64_t room = std::max<int64_t>(1, model.context_length - kOutputTokens);
  const int64_t long_prompt = std::min(kLongPrompt, room);
  const int64_t short_prompt = std::min(kShortPrompt, room);

  EngineConfig config;
  config.kv_type = like.kv_type;
  config.block_size = like.block_size;
  config.max_batch_size = 2;
  config.kv_blocks = blocks_for_tokens(long_prompt + kOutputTokens, like.block_size) +
                     2 * blocks_for_tokens(short_prompt + kOutputTokens, like.block_size);
  config.finished_history = 0;
  Engine engine(transformer, weight_bytes, config);  // no observer: nothing is reported

  // One long prompt alone (prefill, then single-row decode), then two short ones together
  // (a batch of prefills, then two-row decode).
  engine.submit(warm_up_request(long_prompt, 1, model.vocab_size));
  engine.run_until_idle();
  engine.submit(warm_up_request(short_prompt, 2, model.vocab_size));
  engine.submit(warm_up_request(short_prompt, 3, model.vocab_size));
  engine.run_until_idle();

  WarmUpResult result;
  result.steps = engine.steps_run();
  result.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace servescope::serving
