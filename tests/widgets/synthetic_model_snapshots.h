// Synthetic but realistic snapshots of the roofline, quantisation and attention panels, shaped
// like what the engine measures on the small default model on lavapipe, for widget tests and
// for rendering the panels to look at them.
#pragma once

#include "widgets/attention_panel.h"
#include "widgets/quantisation_panel.h"
#include "widgets/quantisation_snapshot.h"
#include "widgets/roofline_panel.h"

namespace servescope::widgets::testing {

// A probed device (cache, main memory, compute) and steps: one prefill, decodes at batch 1,
// a mixed step, then decodes at batch 2..32 walking up the main-memory slope.
RooflineSnapshot synthetic_roofline();
// What a class sees: sixteen requests joining one by one, each prefilled (mixed with the
// decodes for every fourth), decode batches of every size from 1 to 16.
RooflineSnapshot synthetic_roofline_class();

// The bundled model's quant-report figures (BENCHMARKS.md), a Q4_0 error histogram of
// simulated weights quantised exactly as Q4_0 does, SQNR per layer, and a prompt continued by
// the F32 baseline and Q4_0 weights that part at token 8.
QuantisationSnapshot synthetic_quantisation();
// The same with every weight type the panel offers in the table (ten rows), all chosen.
QuantisationSnapshot synthetic_quantisation_every_type();

// Attention of a prefill of `tokens` prompt tokens from position 0 (queries = keys), or of one
// decode step over `tokens` cached tokens when decode is true. Each visible row is a softmax
// (sums to 1): a sink on the first token, a pull to the previous one, and some spread.
AttentionSnapshot synthetic_attention(int tokens, bool decode);

}  // namespace servescope::widgets::testing
