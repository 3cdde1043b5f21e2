// Synthetic but realistic panel snapshots, shaped like what the engine measures on the small
// default model, for widget tests and for rendering the panels to look at them.
#pragma once

#include "widgets/phases_panel.h"

namespace servescope::widgets::testing {

// A 160-token prompt prefilled in one step, then a second request joining (a mixed step), then
// decode steps whose attention time grows with the context while matmul time stays flat.
PhasesSnapshot synthetic_phases(bool kernels_measured);

}  // namespace servescope::widgets::testing
