#include "tests/widgets/synthetic_snapshots.h"

namespace servescope::widgets::testing {

PhasesSnapshot synthetic_phases(bool kernels_measured) {
  PhasesSnapshot snap;
  double clock = 1000.0;  // any monotonic origin
  int64_t context = 0;
  auto add = [&](int64_t prefill, int64_t decode, int64_t sequences) {
    StepBar s;
    s.index = static_cast<int64_t>(snap.steps.size());
    context += prefill > 0 ? prefill : 1;
    s.context_tokens = context;
    s.prefill_tokens = prefill;
    s.decode_tokens = decode;
    s.sequences = sequences;
    // Costs per token in the shape of a small model on a CPU: matmul per token, attention per
    // token and context position.
    const double tokens = static_cast<double>(prefill + decode);
    s.matmul_ms = 3.2 + 0.21 * tokens;
    s.attention_ms = 0.15 + 0.0021 * static_cast<double>(context) * tokens;
    s.norm_ms = 0.08 + 0.004 * tokens;
    s.other_ms = 0.4 + 0.01 * tokens;
    s.kernels_measured = kernels_measured;
    s.start_ms = clock;
    s.end_ms = clock + s.matmul_ms + s.attention_ms + s.norm_ms + s.other_ms + 0.3;
    clock = s.end_ms + 0.6;
    snap.steps.push_back(s);
  };
  add(160, 0, 1);
  for (int i = 0; i < 30; ++i) add(0, 1, 1);
  add(48, 1, 2);
  for (int i = 0; i < 90; ++i) add(0, 2, 2);

  double prefill_ms = 0.0, decode_ms = 0.0;
  int64_t prefill_tokens = 0, decode_tokens = 0;
  for (const StepBar& s : snap.steps) {
    const double ms = s.end_ms - s.start_ms;
    if (s.decode_tokens == 0) {
      prefill_ms += ms;
      prefill_tokens += s.prefill_tokens;
    } else if (s.prefill_tokens == 0) {
      decode_ms += ms;
      decode_tokens += s.decode_tokens;
    }
  }
  snap.prefill_tokens_per_s = static_cast<double>(prefill_tokens) / prefill_ms * 1000.0;
  snap.decode_tokens_per_s = static_cast<double>(decode_tokens) / decode_ms * 1000.0;
  return snap;
}

}  // namespace servescope::widgets::testing
