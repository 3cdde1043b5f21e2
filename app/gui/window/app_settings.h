// The one place the window's remembered settings live (the platform's ServeScope settings
// file), for every part of the window that reads or writes them.
#pragma once

#include <QSettings>

namespace servescope::gui {

inline QSettings app_settings() { return QSettings("ServeScope", "servescope"); }

}  // namespace servescope::gui
