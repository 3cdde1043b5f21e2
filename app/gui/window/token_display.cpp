#include "app/gui/window/token_display.h"

namespace servescope::gui {

QString token_display_text(const Tokenizer& tokenizer, int32_t id) {
  // An id the tokenizer does not list (the loader refuses such models): shown, never thrown.
  if (id < 0 || id >= tokenizer.size()) return QString("<id %1>").arg(id);
  const std::string bytes = tokenizer.token_bytes(id);
  const QString text = QString::fromUtf8(bytes.data(), static_cast<qsizetype>(bytes.size()));
  if (bytes.empty() || text.contains(QChar::ReplacementCharacter)) {
    return QString::fromStdString(tokenizer.piece(id));
  }
  return text;
}

}  // namespace servescope::gui
