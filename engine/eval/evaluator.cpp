#include "engine/eval/evaluator.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/serving/generator.h"

namespace servescope::eval {

std::vector<std::vector<int32_t>> split_into_chunks(std::span<const int32_t> text_ids,
                                                    int64_t context_length, int32_t bos_id,
                                                    int64_t max_chunks) {
  if (context_length < 2) {
    throw InputError("a context of " + std::to_string(context_length) +
                     " tokens is too short to evaluate");
  }
  const bool with_bos = bos_id >= 0;
  const int64_t minimum_text = with_bos ? 1 : 2;  // at least one predicted token per chunk
  if (static_cast<int64_t>(text_ids.size()) < minimum_text) {
    throw InputError("the evaluation text has " + std::to_string(text_ids.size()) +
                     " tokens: too few to predict any");
  }
  const int64_t text_per_chunk = with_bos ? context_length - 1 : context_length;
  std::vector<std::vector<int32_t>> chunks;
  for (size_t start = 0; start < text_ids.size(); start += static_cast<size_t>(text_per_chunk)) {
    if (max_chunks > 0 && static_cast<int64_t>(chunks.size()) == max_chunks) break;
    const size_t end = std::min(text_ids.size(), start + static_cast<size_t>(text_per_chunk));
    std::vector<int32_t> chunk;
    if (with_bos) chunk.push_back(bos_id);
    chunk.insert(chunk.end(), text_ids.begin() + static_cast<std::ptrdiff_t>(start),
                 text_ids.begin() + static_cast<std::ptrdiff_t>(end));
    if (chunk.size() >= 2) chunks.push_back(std::move(chunk));  // a lone leftover predicts nothing
  }
  return chunks;
}

int64_t scored_positions(const std::vector<std::vector<int32_t>>& chunks) {
  int64_t n = 0;
  for (const auto& chunk : chunks) n += static_cast<int64_t>(chunk.size()) - 1;
  return n;
}

std::vector<float> chunk_logits(model::Transformer& transformer, std::span<const int32_t> chunk,
                                int64_t max_logit_bytes) {
  model::KvCache cache = transformer.new_cache(static_cast<int64_t>(chunk.size()));
  const int64_t vocab = transformer.config().vocab_size;
  const auto piece = static_cast<size_t>(
      std::max<int64_t>(1, max_logit_bytes / (vocab * static_cast<int64_t>(sizeof(float)))));
  if (chunk.size() <= piece) return transformer.forward(chunk, cache, /*all_positions=*/true);
  std::vector<float> logits;
  logits.reserve(chunk.size() * static_cast<size_t>(vocab));
  for (size_t start = 0; start < chunk.size(); start += piece) {
    const std::vector<float> part = transformer.forward(
        chunk.subspan(start, std::min(piece, chunk.size() - start)), cache, true);
    logits.insert(logits.end(), part.begin(), part.end());
  }
  return logits;
}

QualityEvaluator::QualityEvaluator(std::vector<std::vector<int32_t>> chunks,
                                   ProgressCallback on_progress)
    : chunks_(std::move(chunks)),
      on_progress_(std::move(on_progress)),
      positions_total_(scored_positions(chunks_)) {}

template <class ScoreRow>
void QualityEvaluator::run(model::Transformer& transformer, ScoreRow score_row,
                           const std::string& label, VariantQuality& quality,
                           LogitComparison* comparison) {
  const int64_t vocab = transformer.config().vocab_size;
  const auto row_size = static_cast<size_t>(vocab);
  double nll_sum = 0.0;
  int64_t position = 0;
  for (const std::vector<int32_t>& chunk : chunks_) {
    const std::vector<float> logits = chunk_logits(transformer, chunk);
    // Row t predicts token t + 1; the last row has nothing to predict in this chunk.
    for (size_t t = 0; t + 1 < chunk.size(); ++t) {
      const std::span<const float> row(logits.data() + t * row_size, row_size);
      const std::vector<double> log_probs = log_softmax(row);
      const int32_t target = chunk[t + 1];
      if (target < 0 || target >= vocab) {
        throw InputError("evaluation token " + std::to_string(target) +
                         " is outside the vocabulary of " + std::to_string(vocab));
      }
      nll_sum -= log_probs[static_cast<size_t>(target)];
      score_row(position, log_probs);
      ++position;
    }
    quality.positions = position;
    quality.perplexity = std::exp(nll_sum / static_cast<double>(position));
    if (comparison != nullptr) quality.vs_baseline = comparison->summary();
    if (on_progress_) {
      on_progress_({label, position, positions_total_, quality.perplexity, quality.vs_baseline});
    }
  }
}

VariantQuality QualityEvaluator::score(model::Transformer& transformer, const std::string& label) {
  VariantQuality quality{label, 0, 1.0, {}};
  run(
      transformer, [](int64_t, const std::vector<double>&) {}, label, quality, nullptr);
  return quality;
}

VariantQuality QualityEvaluator::run_baseline(model::Transformer& baseline,
                                              const std::string& label) {
  vocab_ = baseline.config().vocab_size;
  baseline_log_probs_.assign(static_cast<size_t>(positions_total_ * vocab_), 0.0f);
  VariantQuality quality{label, 0, 1.0, {}};
  run(
      baseline,
      [&](int64_t position, const std::vector<double>& log_probs) {
        std::transform(log_probs.begin(), log_probs.end(),
                       baseline_log_probs_.begin() + position * vocab_,
                       [](double v) { return static_cast<float>(v); });
      },
      label, quality, nullptr);
  return quality;
}

VariantQuality QualityEvaluator::compare(model::Transformer& variant, const std::string& label) {
  if (baseline_log_probs_.empty()) throw InputError("compare() needs run_baseline() first");
  if (variant.config().vocab_size != vocab_) {
    throw InputError(label + " has a vocabulary of " + std::to_string(variant.config().vocab_size) +
                     " tokens, the baseline " + std::to_string(vocab_));
  }
  LogitComparison comparison;
  VariantQuality quality{label, 0, 1.0, {}};
  const auto vocab = static_cast<size_t>(vocab_);
  std::vector<double> base(vocab), rounded(vocab);
  run(
      variant,
      [&](int64_t position, const std::vector<double>& log_probs) {
        // Both sides rounded to float as the baseline is stored, so equal logits give KL 0.
        const float* stored = baseline_log_probs_.data() + position * vocab_;
        for (size_t i = 0; i < vocab; ++i) {
          base[i] = stored[i];
          rounded[i] = static_cast<float>(log_probs[i]);
        }
        comparison.add(base, rounded);
      },
      label, quality, &comparison);
  return quality;
}

std::vector<int32_t> greedy_continuation(model::Transformer& transformer,
                                         std::span<const int32_t> prompt, int64_t tokens) {
  serving::EngineRequest request;
  request.prompt_ids.assign(prompt.begin(), prompt.end());
  request.max_tokens = tokens;
  request.sampling.greedy = true;
  request.stop_token = -1;
  return serving::generate(transformer, request).generated_ids;
}

}  // namespace servescope::eval
