#include "tests/widgets/synthetic_model_snapshots.h"

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <limits>

namespace servescope::widgets::testing {

RooflineSnapshot synthetic_roofline() {
  RooflineSnapshot s;
  s.device_name = QStringLiteral("llvmpipe (LLVM 15.0.7, 256 bits), Mesa 23.2");
  s.cache_gb_per_s = 48.6;
  s.memory_gb_per_s = 12.3;
  s.compute_gflop_per_s = 96.4;
  int64_t step = 0;
  // F32 weights: 2 FLOPs per 4-byte weight is 0.5 FLOP/byte per token in the batch, a little
  // less once the KV cache is read too.
  s.points.push_back({step++, StepPhase::kPrefill, 1, 29.5, 61.2});
  for (int i = 0; i < 6; ++i) {
    s.points.push_back({step++, StepPhase::kDecode, 1, 0.49, 5.1 + 0.08 * i});
  }
  s.points.push_back({step++, StepPhase::kMixed, 2, 7.5, 30.0});
  for (const int batch : {2, 4, 8, 16, 32}) {
    const double intensity = 0.49 * batch * 0.93;
    const double reached = std::min(intensity * 11.0, 80.0);
    for (int i = 0; i < 3; ++i) {
      s.points.push_back(
          {step++, StepPhase::kDecode, batch, intensity, reached * (0.9 + 0.03 * i)});
    }
  }
  return s;
}

RooflineSnapshot synthetic_roofline_class() {
  RooflineSnapshot s = synthetic_roofline();
  s.points.clear();
  int64_t step = 0;
  // Sixteen classmates join one by one: each prompt is prefilled (intensity grows with its
  // length), a few joins share a step with the decodes (mixed), and the decode batch grows
  // 1, 2, ..., 16 with a few steps at each size.
  for (int batch = 1; batch <= 16; ++batch) {
    const double prompt_tokens = 24.0 + 11.0 * (batch % 5);
    const double prefill_intensity = 0.49 * prompt_tokens * 0.93;
    s.points.push_back({step++, batch % 4 == 0 ? StepPhase::kMixed : StepPhase::kPrefill, batch,
                        prefill_intensity, std::min(prefill_intensity * 11.0, 88.0) * 0.8});
    const double intensity = 0.49 * batch * 0.93;
    for (int i = 0; i < 3; ++i) {
      s.points.push_back({step++, StepPhase::kDecode, batch, intensity,
                          std::min(intensity * 11.0, 80.0) * (0.88 + 0.04 * i)});
    }
  }
  return s;
}

namespace {

// Q4_0 as GGML stores it: blocks of 32, scale d = (value of largest magnitude) / -8, codes
// round(x / d) + 8 clamped to 0..15, decoded as (code - 8) * d.
std::vector<float> q4_0_round_trip(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t block = 0; block < values.size(); block += 32) {
    float extreme = 0.0f;
    for (size_t i = block; i < block + 32 && i < values.size(); ++i) {
      if (std::abs(values[i]) > std::abs(extreme)) extreme = values[i];
    }
    const float d = extreme / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (size_t i = block; i < block + 32 && i < values.size(); ++i) {
      const float code = std::clamp(std::round(values[i] * inverse) + 8.0f, 0.0f, 15.0f);
      out[i] = (code - 8.0f) * d;
    }
  }
  return out;
}

TensorErrorSnapshot simulated_q4_0_error() {
  // Weights ~ N(0, 0.02) from a fixed linear congruential generator (Box-Muller).
  std::vector<float> weights(64 * 1024);
  uint64_t state = 12345;
  auto uniform = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  };
  for (float& w : weights) {
    w = static_cast<float>(0.02 * std::sqrt(-2.0 * std::log(uniform())) *
                           std::cos(6.283185307179586 * uniform()));
  }
  const std::vector<float> quantised = q4_0_round_trip(weights);
  TensorErrorSnapshot e;
  e.tensor = QStringLiteral("blk.3.ffn_down.weight");
  e.type = QStringLiteral("q4_0");
  for (const double magnitude : {1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5}) {
    e.edges.push_back(-magnitude);
  }
  for (const double magnitude : {1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1}) {
    e.edges.push_back(magnitude);
  }
  e.counts.assign(e.edges.size() + 1, 0);
  double signal = 0.0;
  double noise = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double error = static_cast<double>(quantised[i]) - weights[i];
    const auto bin = std::upper_bound(e.edges.begin(), e.edges.end(), error) - e.edges.begin();
    ++e.counts[static_cast<size_t>(bin)];
    signal += static_cast<double>(weights[i]) * weights[i];
    noise += error * error;
    e.max_abs_error = std::max(e.max_abs_error, std::abs(error));
  }
  e.rmse = std::sqrt(noise / static_cast<double>(weights.size()));
  e.sqnr_db = 10.0 * std::log10(signal / noise);
  return e;
}

TokenContinuation continuation(const QString& label, const QStringList& pieces) {
  TokenContinuation c;
  c.label = label;
  for (const QString& piece : pieces) {
    c.pieces.push_back(piece);
    c.ids.push_back(static_cast<int32_t>(qHash(piece) % 4096));  // same piece, same id
  }
  return c;
}

// A Q4_1 block of 32 made-up weights: min m, scale d = (max - min) / 15, q = round((x - m) / d).
QuantBlockSnapshot simulated_q4_1_block() {
  QuantBlockSnapshot b;
  b.type = QStringLiteral("q4_1");
  b.tensor = QStringLiteral("blk.0.ffn_down.weight");
  b.block_bytes = 20;
  b.layout = {{"d", 2, "scale, fp16"},
              {"m", 2, "minimum, fp16"},
              {"qs", 16, "32 quants, 4 bits each, two per byte"}};
  for (int i = 0; i < 32; ++i) b.originals.push_back(0.02 * std::sin(0.7 * i) + 0.004 * (i % 5));
  const double lo = *std::min_element(b.originals.begin(), b.originals.end());
  const double hi = *std::max_element(b.originals.begin(), b.originals.end());
  b.d = (hi - lo) / 15.0;
  b.d_bits = 0x1a0f;
  b.has_min = true;
  b.m = lo;
  b.m_bits = 0xa4c2;
  b.formula = QStringLiteral("x = d \u00b7 q + m");
  b.quant_bits = 4;
  b.quant_min = 0;
  b.quant_max = 15;
  for (const double x : b.originals) {
    const int q = static_cast<int>(std::lround((x - b.m) / b.d));
    b.quants.push_back(q);
    b.reconstructed.push_back(b.d * q + b.m);
  }
  return b;
}

}  // namespace

QuantisationSnapshot synthetic_quantisation() {
  QuantisationSnapshot s;
  s.tensor_error = simulated_q4_0_error();
  s.sqnr_variant = QStringLiteral("q4_0 weights, q8_0 KV cache");
  const double weight_db[] = {19.6, 19.9, 20.1, 19.8, 20.0, 19.7};
  const double kv_db[] = {41.2, 40.6, 39.8, 40.3, 39.5, 38.9};
  for (int layer = 0; layer < 6; ++layer) {
    const QString name = QStringLiteral("blk.%1").arg(layer);
    s.weight_sqnr.push_back({name, weight_db[layer]});
    s.kv_sqnr.push_back({name, kv_db[layer]});
  }
  s.weight_sqnr.push_back({QStringLiteral("other"), 20.4});
  // Weights and weights + KV cache of a 256-token context (in millions of bytes), bits per
  // weight, tokens/s, TTFT and TPOT p50 / p99 under a load, device ms per request.
  struct Measured {
    const char* weights;
    const char* kv;
    double weight_million_bytes, bits, memory_million_bytes, prefill, decode, ttft50, ttft99,
        tpot50, tpot99, cost, perplexity, kl, top1;
  };
  const Measured rows[] = {
      {"f32", "f32", 18.46, 32.0, 19.77, 2631, 556, 111, 190, 4.1, 6.6, 20.0, 51.791, 0.0, 1.0},
      {"f16", "f16", 9.23, 16.0, 9.89, 2023, 990, 99, 170, 3.4, 5.9, 17.0, 51.791, 3.81e-7, 1.0},
      {"q8_0", "f32", 4.91, 8.51, 6.22, 2561, 1558, 95, 160, 3.2, 5.5, 16.3, 51.829, 1.84e-4,
       0.991},
      {"q8_0", "q8_0", 4.91, 8.51, 5.26, 2474, 1478, 97, 162, 3.3, 5.6, 16.5, 51.847, 2.70e-4,
       0.990},
      {"q4_0", "f32", 2.61, 4.52, 3.92, 2511, 1224, 118, 200, 3.9, 6.8, 20.2, 53.118, 4.72e-2,
       0.875},
      {"q4_0", "q8_0", 2.61, 4.52, 2.96, 2390, 1290, 117, 198, 3.8, 6.7, 20.0, 53.164, 4.81e-2,
       0.873},
  };
  for (const Measured& m : rows) {
    QuantVariantRow row;
    row.weight_type = QString::fromLatin1(m.weights);
    row.kv_type = QString::fromLatin1(m.kv);
    row.baseline = s.variants.empty();
    row.weight_bytes = m.weight_million_bytes * 1e6;
    row.bits_per_weight = m.bits;
    row.memory_bytes = m.memory_million_bytes * 1e6;
    row.prefill_tokens_per_s = m.prefill;
    row.decode_tokens_per_s = m.decode;
    row.ttft_p50_ms = m.ttft50;
    row.ttft_p99_ms = m.ttft99;
    row.tpot_p50_ms = m.tpot50;
    row.tpot_p99_ms = m.tpot99;
    row.cost_per_request = m.cost;
    row.perplexity = m.perplexity;
    row.mean_kl = m.kl;
    row.top1_agreement = m.top1;
    s.variants.push_back(row);
  }
  s.cost_unit = QStringLiteral("device ms");
  s.load = QStringLiteral("16 clients all at t = 0, prompts 32 tokens, 32 output tokens");
  // The app gives quant-report's rule (tested with the engine); the panel's tests need a rule
  // that reads the limits: here, each limit against the row's own number.
  s.judge = [rows = s.variants](int row, const QuantLimits& limits) {
    QuantVerdict v;
    const QuantVariantRow& r = rows[static_cast<size_t>(row)];
    if (r.mean_kl > limits.max_kl) v.reasons << QStringLiteral("mean KL above the limit");
    if (r.tpot_p99_ms > limits.max_tpot_ms) v.reasons << QStringLiteral("p99 TPOT above the limit");
    if (decode_speedup(r, rows.front()) < limits.min_speedup) {
      v.reasons << QStringLiteral("decode speed-up %1x below the limit")
                       .arg(decode_speedup(r, rows.front()), 0, 'f', 2);
    }
    v.accepted = v.reasons.isEmpty();
    return v;
  };
  s.limits = {0.05, std::numeric_limits<double>::infinity(), 1.2};
  s.type_choices = {"f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0"};
  s.chosen_types = {"f16", "q8_0", "q4_0"};
  s.blocks = {simulated_q4_1_block()};
  s.prompt = QStringLiteral("Once upon a time");
  s.baseline_continuation =
      continuation(QStringLiteral("f32 baseline"),
                   {",", "▁there", "▁was", "▁a", "▁little", "▁girl", "▁named", "▁Lily", ".", "▁She",
                    "▁loved", "▁to", "▁play", "▁outside", "▁in", "▁the", "▁park", "."});
  s.variant_continuation =
      continuation(QStringLiteral("q4_0 weights"),
                   {",", "▁there", "▁was", "▁a", "▁little", "▁girl", "▁named", "▁Lucy", ".",
                    "▁Lucy", "▁liked", "▁to", "▁play", "▁with", "▁her", "▁toys", ".", "▁One"});
  return s;
}

QuantisationSnapshot synthetic_quantisation_every_type() {
  QuantisationSnapshot s = synthetic_quantisation();
  // Every weight type the panel offers, each with the F32 KV cache, after the six measured
  // rows; figures between those of their neighbours in bits per weight.
  struct Extra {
    const char* weights;
    double weight_million_bytes, bits, decode, kl, top1;
  };
  const Extra extras[] = {{"bf16", 9.23, 16.0, 985, 2.9e-5, 0.999},
                          {"q5_1", 3.46, 6.0, 1301, 8.1e-3, 0.962},
                          {"q5_0", 3.18, 5.5, 1342, 1.12e-2, 0.951},
                          {"q4_1", 2.89, 5.0, 1189, 2.94e-2, 0.912}};
  for (const Extra& e : extras) {
    QuantVariantRow row = s.variants[2];  // q8_0 weights, F32 KV: the latencies' shape
    row.weight_type = QString::fromLatin1(e.weights);
    row.weight_bytes = e.weight_million_bytes * 1e6;
    row.bits_per_weight = e.bits;
    row.memory_bytes = row.weight_bytes + 1.31e6;
    row.decode_tokens_per_s = e.decode;
    row.mean_kl = e.kl;
    row.top1_agreement = e.top1;
    s.variants.push_back(row);
  }
  // The judge reads the rows it was given: give it these.
  s.judge = [rows = s.variants](int row, const QuantLimits& limits) {
    QuantVerdict v;
    const QuantVariantRow& r = rows[static_cast<size_t>(row)];
    if (r.mean_kl > limits.max_kl) v.reasons << QStringLiteral("mean KL above the limit");
    if (decode_speedup(r, rows.front()) < limits.min_speedup) {
      v.reasons << QStringLiteral("decode speed-up below the limit");
    }
    v.accepted = v.reasons.isEmpty();
    return v;
  };
  s.chosen_types = s.type_choices;
  return s;
}

AttentionSnapshot synthetic_attention(int tokens, bool decode) {
  static const char* const kWords[] = {
      "<s>",  "▁Once",   "▁upon",    "▁a",     "▁time", ",",    "▁there", "▁was",
      "▁a",   "▁little", "▁girl",    "▁named", "▁Lily", ".",    "▁She",   "▁loved",
      "▁to",  "▁play",   "▁outside", "▁in",    "▁the",  "▁sun", "shine",  ".",
      "▁One", "▁day",    ",",        "▁she",   "▁saw",  "▁a",   "▁big",   ",",
      "▁red", "▁ball",   "▁in",      "▁the",   "▁park", ".",    "▁She",   "▁wanted"};
  constexpr int kWordCount = static_cast<int>(sizeof(kWords) / sizeof(kWords[0]));
  AttentionSnapshot s;
  s.layer = 2;
  s.head = 3;
  s.layer_count = 6;
  s.head_count = 8;
  for (int i = 0; i < tokens; ++i)
    s.key_pieces.push_back(QString::fromUtf8(kWords[i % kWordCount]));
  const int first = decode ? tokens - 1 : 0;
  s.first_query_position = first;
  for (int i = first; i < tokens; ++i) s.query_pieces.push_back(s.key_pieces[i]);
  const auto queries = static_cast<int>(s.query_pieces.size());
  s.weights.assign(static_cast<size_t>(queries) * tokens, 0.0f);
  for (int q = 0; q < queries; ++q) {
    const int position = first + q;
    double total = 0.0;
    std::vector<double> scores(position + 1);
    for (int k = 0; k <= position; ++k) {
      const double score = (k == 0 ? 2.2 : 0.0) + (k == position - 1 ? 1.8 : 0.0) +
                           0.6 * std::sin(1.3 * position + 0.7 * k);
      scores[k] = std::exp(score);
      total += scores[k];
    }
    for (int k = 0; k <= position; ++k) {
      s.weights[static_cast<size_t>(q) * tokens + k] = static_cast<float>(scores[k] / total);
    }
    for (int k = position + 1; k < tokens; ++k) {
      s.weights[static_cast<size_t>(q) * tokens + k] = 0.0f;  // masked: ignored by the panel
    }
  }
  return s;
}

}  // namespace servescope::widgets::testing
