#include "tests/widgets/synthetic_model_snapshots.h"

#include <algorithm>
#include <cmath>

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
