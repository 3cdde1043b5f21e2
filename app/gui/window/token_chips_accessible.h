// What screen readers are told of TokenChips: a list whose items are the chips, each named by
// its token ("token 3 of 12: " the", id 279, probability 41.2%").
#pragma once

namespace servescope::gui {

// Registers the accessible interface of TokenChips with Qt, once; harmless to call again.
void install_token_chips_accessible();

}  // namespace servescope::gui
