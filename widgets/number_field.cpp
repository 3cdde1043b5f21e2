#include "widgets/number_field.h"

namespace servescope::widgets {

QString NumberField::textFromValue(double value) const {
  // The spin box reads its text back in its own locale, so it is written in that locale too.
  QString text = locale().toString(value, 'f', decimals());
  if (!isGroupSeparatorShown()) text.remove(locale().groupSeparator());
  const QString point = locale().decimalPoint();
  if (text.contains(point)) {
    while (text.endsWith(QLatin1Char('0'))) text.chop(1);
    if (text.endsWith(point)) text.chop(point.size());
  }
  return text;
}

}  // namespace servescope::widgets
