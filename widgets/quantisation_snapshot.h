// What the quantisation panel shows, as plain data the app fills from the engine's quant-report
// and its own runs: how far one tensor's quantised values are from the originals, signal to
// quantisation noise per layer (weights and KV cache), every (weight type, KV type) variant
// measured against the baseline, one prompt continued by the baseline and a variant, and one
// block of the weights in each block type.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>
#include <functional>
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

// One measured variant, as quant-report measures it. Quality is against the baseline on the same
// text; speed on the same backend in the same run; latency and cost under the report's fixed
// load (many requests at once through the serving engine).
struct QuantVariantRow {
  QString weight_type;  // "q8_0"
  QString kv_type;      // "f16"
  bool baseline = false;
  double weight_bytes = 0.0;     // the weights alone
  double bits_per_weight = 0.0;  // 8 x weight bytes / parameters, every tensor counted
  double memory_bytes = 0.0;     // weights + a full context's KV cache (the verdict's memory)
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  double ttft_p50_ms = 0.0;
  double ttft_p99_ms = 0.0;
  double tpot_p50_ms = 0.0;
  double tpot_p99_ms = 0.0;
  double cost_per_request = 0.0;  // in QuantisationSnapshot::cost_unit
  double perplexity = 0.0;
  double mean_kl = 0.0;         // nats, of next-token distributions against the baseline
  double top1_agreement = 1.0;  // fraction of positions whose most likely token is the same
};

// The user's limits: a variant is accepted when its mean KL <= max_kl, its p99 TPOT under the
// load <= max_tpot_ms, its decode speed-up over the baseline >= min_speedup, and its memory is
// smaller than the baseline's.
struct QuantLimits {
  double max_kl = std::numeric_limits<double>::infinity();       // infinity: no limit
  double max_tpot_ms = std::numeric_limits<double>::infinity();  // infinity: no limit
  double min_speedup = 0.0;                                      // 0: no limit
};

struct QuantVerdict {
  bool accepted = false;
  QStringList reasons;  // one per failed limit; empty when accepted
};

// The accept-only-if rule for variant row `row` under `limits`. The app gives the engine's own
// rule (quant-report's), so the panel never judges differently; without one nothing is judged.
using QuantJudge = std::function<QuantVerdict(int row, const QuantLimits& limits)>;

// A comparison run in progress, or how the last one ended.
struct QuantRunState {
  bool running = false;
  QString stage;          // "quality of q4_0"
  double fraction = 0.0;  // of the whole run's work, 0..1
  QString outcome;        // after a run that did not finish: "cancelled", or the problem
};

// Sub-block of a K-quant super-block: its own small-integer scale (and min), stored in a few
// bits and multiplied by the super-block's fp16 d (and dmin).
struct QuantSubBlock {
  int first = 0;       // element index in the block
  int count = 0;       // 16 or 32
  int scale_q = 0;     // the stored integer
  int min_q = 0;       // the stored integer of the min (types with a min)
  double scale = 0.0;  // effective: the super-block d times the stored integer
  double min = 0.0;    // effective: dmin times min_q, subtracted from every value
};

// A part of the block's bytes, in storage order: "d" (2 bytes, fp16), "qs" (16 bytes), ...
struct QuantByteField {
  QString name;
  int bytes = 0;
  QString meaning;  // "scale, fp16"
};

// One block of the loaded model's weights stored as a block type: every number is computed
// from the model (the originals are the tensor's values, the rest is the type's encoder and
// decoder run on them).
struct QuantBlockSnapshot {
  QString type;     // "q4_1"
  QString tensor;   // "blk.0.ffn_down.weight"
  int64_t row = 0;  // the tensor row the block comes from
  int64_t first_column = 0;
  int block_bytes = 0;
  std::vector<QuantByteField> layout;
  // value = d x q + m for the 32-element types; K-quants: value = scale x q - min with each
  // sub-block's scale and min (QuantSubBlock).
  double d = 0.0;       // the block's fp16 scale (K-quants: the super-block's)
  uint16_t d_bits = 0;  // its fp16 bits
  bool has_min = false;
  double m = 0.0;  // the fp16 min (Q4_1, Q5_1) or dmin (K-quants)
  uint16_t m_bits = 0;
  QString formula;     // "x = d · q + m"
  int quant_bits = 0;  // bits per stored quant
  int quant_min = 0;   // the integers the formula can multiply: quant_min..quant_max
  int quant_max = 0;
  std::vector<int> quants;  // per element, the integer the formula multiplies
  std::vector<double> originals;
  std::vector<double> reconstructed;
  std::vector<QuantSubBlock> sub_blocks;  // K-quants; empty for the 32-element types
  double bits_per_weight() const {
    return originals.empty() ? 0.0 : 8.0 * block_bytes / static_cast<double>(originals.size());
  }
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
  QString cost_unit;                      // of cost_per_request, e.g. "device ms"
  QString load;              // the fixed load latency and cost were measured under, in words
  QuantJudge judge;          // the accept-only-if rule; empty: no verdicts
  QuantLimits limits;        // the limits to start from
  QStringList type_choices;  // weight types a comparison can include (the baseline's aside)
  QStringList chosen_types;  // the ones the next (or the shown) comparison includes
  QuantRunState run;
  std::vector<QuantBlockSnapshot> blocks;  // one block of the weights per block type
  QString prompt;
  TokenContinuation baseline_continuation;
  TokenContinuation variant_continuation;
};

// The baseline row: the one marked baseline, else the first; nullptr when there are none.
const QuantVariantRow* baseline_of(const std::vector<QuantVariantRow>& variants);
// Decode tokens/s of the variant over the baseline's; 0 when the baseline has none.
double decode_speedup(const QuantVariantRow& variant, const QuantVariantRow& baseline);

// Index of the first token where the two continuations differ (by id when both carry ids for
// every piece, else by piece); the shorter length when one is a prefix of the other; -1 when
// they are identical.
int64_t first_divergent_token(const TokenContinuation& a, const TokenContinuation& b);

}  // namespace servescope::widgets
