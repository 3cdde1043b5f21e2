// The window's words in the user's language: ServeScope's own (servescope_<locale>.qm in the
// data folder's translations/) and Qt's (qtbase_<locale>.qm, for the standard dialogs' buttons).
// Where neither exists the window stays in English, the language of the sources, silently.
#pragma once

#include <QLocale>
#include <QString>

class QCoreApplication;

namespace servescope::gui {

// Installs on `app` the translators found for `locale`; returns how many (0: English). Call it
// before the window is built: widgets translate their words when they are made.
int install_translators(QCoreApplication& app, const QLocale& locale, const QString& folder);

}  // namespace servescope::gui
