#include "widgets/plot_text.h"

#include <cmath>

namespace servescope::widgets {

QString format_number(double value) {
  if (std::isnan(value)) return QStringLiteral("n/a");
  if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  const double magnitude = std::fabs(value);
  if (magnitude >= 100.0 || magnitude == 0.0) return QString::number(value, 'f', 0);
  const int decimals = 2 - static_cast<int>(std::floor(std::log10(magnitude)));
  return QString::number(value, 'f', std::min(decimals, 9));
}

QString printable_piece(const QString& piece) {
  QString out = piece;
  out.replace(QChar(' '), QChar(0x2423));   // open box: a visible space
  out.replace(QChar('\n'), QChar(0x21B5));  // return arrow
  out.replace(QChar('\t'), QChar(0x21E5));  // tab arrow
  return out;
}

}  // namespace servescope::widgets
