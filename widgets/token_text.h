// Token pieces as text on a panel or in a CSV file.
#pragma once

#include <QString>

namespace servescope::widgets {

// A piece made printable on an axis or a chip: spaces, newlines and tabs made visible.
QString printable_piece(const QString& piece);

// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled.
QString csv_field(const QString& text);

}  // namespace servescope::widgets
