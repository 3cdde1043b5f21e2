// Number and label text shared by the plotted panels.
#pragma once

#include <QString>

namespace servescope::widgets {

// Three significant digits without exponent notation: 0.0123, 1.23, 12.3, 123, 1234.
QString format_number(double value);

// A token piece made printable on an axis or chip: spaces, newlines and tabs made visible.
QString printable_piece(const QString& piece);

}  // namespace servescope::widgets
