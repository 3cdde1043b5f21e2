// How a token is written on a chip or an axis: what it adds to the text, or its vocabulary
// piece (<s>, </s>, <0xE2>) when that is not whole UTF-8.
#pragma once

#include <QString>
#include <cstdint>

#include "engine/tokenizer/tokenizer.h"

namespace servescope::gui {

QString token_display_text(const Tokenizer& tokenizer, int32_t id);

}  // namespace servescope::gui
