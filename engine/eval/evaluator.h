// Runs models over an evaluation text and measures the quality of variants against a
// baseline: perplexity, KL divergence of next-token distributions, top-1 agreement, and the
// length of the identical greedy continuation. Partial results are streamed through a
// callback so a UI can show progress.
//
// The text is cut into chunks that fit the context: BOS (when the vocabulary has one)
// followed by up to context_length - 1 text tokens, each chunk run from an empty cache. Every
// text token of a chunk is predicted from BOS and the chunk's earlier tokens, so each token is
// scored exactly once. Without BOS a chunk holds context_length tokens and its first token is
// only context.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/eval/logit_metrics.h"
#include "engine/model/transformer.h"

namespace servescope::eval {

// The chunks described above. InputError if the context is shorter than 2 tokens or the text
// has fewer than 2 tokens (nothing to predict). max_chunks > 0 keeps only the first ones.
std::vector<std::vector<int32_t>> split_into_chunks(std::span<const int32_t> text_ids,
                                                    int64_t context_length, int32_t bos_id,
                                                    int64_t max_chunks = 0);

// Tokens predicted in the chunks: each chunk's length - 1.
int64_t scored_positions(const std::vector<std::vector<int32_t>>& chunks);

// Logits of every position of one chunk ([tokens x vocab], row-major), from a fresh cache. A
// chunk whose logits exceed kMaxLogitBytesPerPass runs as consecutive passes over the same
// cache: a backend holds an activation in one binding (lavapipe: 128 MiB), and 512 positions
// of a 128k-token vocabulary are 263 MB of logits.
constexpr int64_t kMaxLogitBytesPerPass = int64_t{64} << 20;
std::vector<float> chunk_logits(model::Transformer& transformer, std::span<const int32_t> chunk,
                                int64_t max_logit_bytes = kMaxLogitBytesPerPass);

// A snapshot after each chunk: how far the run is and the measures so far.
struct EvalProgress {
  std::string variant;
  int64_t positions_done = 0;
  int64_t positions_total = 0;
  double perplexity = 1.0;
  ComparisonSummary vs_baseline;  // all-agreeing zeros while scoring the baseline itself
};
using ProgressCallback = std::function<void(const EvalProgress&)>;

struct VariantQuality {
  std::string variant;
  int64_t positions = 0;
  double perplexity = 1.0;
  ComparisonSummary vs_baseline;
};

class QualityEvaluator {
 public:
  QualityEvaluator(std::vector<std::vector<int32_t>> chunks, ProgressCallback on_progress = {});

  // Perplexity alone: nothing is kept, so any length of text fits in memory.
  VariantQuality score(model::Transformer& transformer, const std::string& label);
  // Scores the baseline and keeps its next-token log-probabilities for compare().
  VariantQuality run_baseline(model::Transformer& baseline, const std::string& label);
  // Scores a variant (same vocabulary) and compares it position by position with the
  // baseline. InputError if run_baseline has not run or the vocabularies differ.
  VariantQuality compare(model::Transformer& variant, const std::string& label);

  int64_t positions_total() const { return positions_total_; }

  // Bytes run_baseline keeps for `positions` scored positions of a `vocab`-token model.
  static uint64_t baseline_bytes(int64_t positions, int64_t vocab) {
    return static_cast<uint64_t>(positions * vocab) * sizeof(float);
  }

 private:
  // Runs every chunk; calls score_row(position, log_probs) for each scored position.
  template <class ScoreRow>
  void run(model::Transformer& transformer, ScoreRow score_row, const std::string& label,
           VariantQuality& quality, LogitComparison* comparison);

  std::vector<std::vector<int32_t>> chunks_;
  ProgressCallback on_progress_;
  int64_t positions_total_ = 0;
  int64_t vocab_ = 0;
  // [positions x vocab]; float halves the memory of a long text at no cost to the measures.
  std::vector<float> baseline_log_probs_;
};

// Greedy continuation of `prompt` for `tokens` tokens (no early stop), for
// identical_prefix_length between a baseline and a variant.
std::vector<int32_t> greedy_continuation(model::Transformer& transformer,
                                         std::span<const int32_t> prompt, int64_t tokens);

}  // namespace servescope::eval
