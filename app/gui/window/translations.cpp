#include "app/gui/window/translations.h"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QTranslator>

namespace servescope::gui {
namespace {

// A translator parented to `app` (which then owns it) when `name` is found for `locale` in
// `folder`: QTranslator::load tries servescope_de_DE.qm, then servescope_de.qm, and so on.
bool install_one(QCoreApplication& app, const QLocale& locale, const QString& name,
                 const QString& folder) {
  auto* translator = new QTranslator(&app);
  if (!translator->load(locale, name, QStringLiteral("_"), folder)) {
    delete translator;
    return false;
  }
  QCoreApplication::installTranslator(translator);
  return true;
}

}  // namespace

int install_translators(QCoreApplication& app, const QLocale& locale, const QString& folder) {
  int installed = 0;
  if (install_one(app, locale, QStringLiteral("qtbase"),
                  QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
    ++installed;
  }
  if (install_one(app, locale, QStringLiteral("servescope"), folder)) ++installed;
  return installed;
}

}  // namespace servescope::gui
