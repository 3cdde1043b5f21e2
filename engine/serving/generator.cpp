#include "engine/serving/generator.h"

#include <chrono>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

double GenerationResult::prefill_tokens_per_s() const {
  return prefill_ms > 0.0 ? static_cast<double>(prefill_tokens) * 1000.0 / prefill_ms : 0.0;
}

double GenerationResult::decode_tokens_per_s() const {
  return decode_ms > 0.0 ? static_cast<double>(decode_steps) * 1000.0 / decode_ms : 0.0;
}

GenerationResult generate(model::Transformer& transformer, const EngineRequest& request,
                          const TokenCallback& on_token) {
  if (request.prompt_ids.empty()) throw InputError("the prompt is empty");
  if (request.max_tokens < 0) throw InputError("max-tokens must be 0 or more");
  Sampler sampler(request.sampling);
  const int64_t context = transformer.config().context_length;
  model::KvCache cache = transformer.new_cache(context);

  GenerationResult result;
  if (request.max_tokens == 0) return result;
  auto start = std::chrono::steady_clock::now();
  std::vector<float> logits = transformer.forward(request.prompt_ids, cache);
  result.prefill_ms = elapsed_ms(start);
  result.prefill_tokens = static_cast<int64_t>(request.prompt_ids.size());

  while (true) {
    const int32_t token = sampler.sample(logits);
    result.generated_ids.push_back(token);
    if (on_token) on_token(token);
    if (token == request.stop_token) {
      result.finish_reason = FinishReason::kStopToken;
      break;
    }
    if (static_cast<int64_t>(result.generated_ids.size()) >= request.max_tokens) break;
    if (cache.length >= context) {
      result.finish_reason = FinishReason::kContextFull;
      break;
    }
    start = std::chrono::steady_clock::now();
    const int32_t step[] = {token};
    logits = transformer.forward(step, cache);
    result.decode_ms += elapsed_ms(start);
    ++result.decode_steps;
  }
  return result;
}

}  // namespace servescope::serving
