// What the quantisation panel shows, as plain data the app fills from the engine's quant-report
// and its own runs: how far one tensor's quantised values are from the originals, signal to
// quantisation noise per layer (weights and KV cache), every (weight type, KV type) variant
// measured against the baseline, and one prompt continued by the baseline and a variant.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>
#include <limits>
#include <vector>

namespace servescope::widgets {

// Error e = quantised - original of one tensor, counted in fixed bins. With edges
// b[0] < ... < b[n-1], counts has n + 1 entries: counts[0] is e < b[0], counts[i] is
// b[i-1] <= e < b[i], counts[n] is e >= b[n-1] (the engine's ErrorHistogram).
struct TensorErrorSnapshot {
  QString tensor;  // "blk.3.ffn_down.weight"
  QString type;    // the quantised type, "q4_0"
  std::vector<double> edges;
  std::vector<int64_t> counts;
  double rmse = 0.0;
  double max_abs_error = 0.0;
  double sqnr_db = 0.0;  // +inf when the values are exact
};

// Signal to quantisation noise of one layer: 10 log10(sum x^2 / sum (q - x)^2).
struct LayerSqnr {
  QString layer;                                              // "blk.3"
  double sqnr_db = std::numeric_limits<double>::quiet_NaN();  // NaN: not measured; +inf: exact
};

// One measured variant. Quality is against the baseline on the same text; speed on the same
// backend in the same run.
struct QuantVariantRow {
  QString weight_type;  // "q8_0"
  QString kv_type;      // "f16"
  bool baseline = false;
  double memory_mb = 0.0;  // weights + a full context's KV cache
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  double latency_ms = 0.0;        // one request end to end
  double cost_per_request = 0.0;  // in QuantisationSnapshot::cost_unit
  double perplexity = 0.0;
  double mean_kl = 0.0;         // nats, of next-token distributions against the baseline
  double top1_agreement = 1.0;  // fraction of positions whose most likely token is the same
};

// The user's limits: a variant is accepted when its mean KL <= max_kl, its decode speed-up
// over the baseline >= min_speedup, and its memory is smaller than the baseline's.
struct QuantLimits {
  double max_kl = std::numeric_limits<double>::infinity();  // infinity: no limit
  double min_speedup = 0.0;                                 // 0: no limit
};

struct TokenContinuation {
  QString label;                // "f32 baseline", "q4_0 weights"
  std::vector<int32_t> ids;     // compared when both sides have ids for every piece
  std::vector<QString> pieces;  // as the tokenizer spells them
};

struct QuantisationSnapshot {
  TensorErrorSnapshot tensor_error;
  QString sqnr_variant;  // which variant the SQNR bars describe: "q4_0 weights, q8_0 KV cache"
  std::vector<LayerSqnr> weight_sqnr;
  std::vector<LayerSqnr> kv_sqnr;
  std::vector<QuantVariantRow> variants;  // the baseline among them (baseline = true)
  QString cost_unit;   // of cost_per_request, e.g. "GB·ms" (memory held x latency)
  QuantLimits limits;  // the limits to start from
  QString prompt;
  TokenContinuation baseline_continuation;
  TokenContinuation variant_continuation;
};

struct QuantVerdict {
  bool accepted = false;
  QStringList reasons;  // one per failed limit; empty when accepted
};

// The baseline row: the one marked baseline, else the first; nullptr when there are none.
const QuantVariantRow* baseline_of(const std::vector<QuantVariantRow>& variants);
// Decode tokens/s of the variant over the baseline's; 0 when the baseline has none.
double decode_speedup(const QuantVariantRow& variant, const QuantVariantRow& baseline);
// Applies the limits as the engine's quant-report does.
QuantVerdict judge_variant(const QuantVariantRow& variant, const QuantVariantRow& baseline,
                           const QuantLimits& limits);

// Index of the first token where the two continuations differ (by id when both carry ids for
// every piece, else by piece); the shorter length when one is a prefix of the other; -1 when
// they are identical.
int64_t first_divergent_token(const TokenContinuation& a, const TokenContinuation& b);

}  // namespace servescope::widgets
