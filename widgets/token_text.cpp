#include "widgets/token_text.h"

namespace servescope::widgets {

QString printable_piece(const QString& piece) {
  QString out = piece;
  out.replace(QChar(' '), QChar(0x2423));   // open box: a visible space
  out.replace(QChar('\n'), QChar(0x21B5));  // return arrow
  out.replace(QChar('\t'), QChar(0x21E5));  // tab arrow
  return out;
}

QString csv_field(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n')) && !text.contains(QLatin1Char('\r'))) {
    return text;
  }
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

}  // namespace servescope::widgets
