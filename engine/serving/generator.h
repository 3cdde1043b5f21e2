// Runs one request to completion: prefill the prompt in one forward call, then decode one
// token per call, timing each phase separately (the first lesson of serving).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/model/transformer.h"
#include "engine/serving/engine.h"
#include "engine/serving/request.h"
#include "engine/serving/sampler.h"

namespace servescope::serving {

struct GenerationResult {
  std::vector<int32_t> generated_ids;
  FinishReason finish_reason = FinishReason::kMaxTokens;
  int64_t prefill_tokens = 0;  // prompt tokens run in the prefill forward pass
  double prefill_ms = 0.0;     // the prompt's forward pass, up to its logits
  double decode_ms = 0.0;      // all single-token forward passes
  int64_t decode_steps = 0;    // single-token forward passes run
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
};

// Called with each generated token as soon as it is chosen.
using TokenCallback = std::function<void(int32_t token)>;

// Runs the engine's request alone (max_tokens may be 0 here; top_k_alternatives is ignored).
// InputError for an empty prompt, a prompt longer than the context, or bad sampling options.
GenerationResult generate(model::Transformer& transformer, const EngineRequest& request,
                          const TokenCallback& on_token = {});

}  // namespace servescope::serving
