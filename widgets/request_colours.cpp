#include "widgets/request_colours.h"

#include <QObject>
#include <QStringList>

namespace servescope::widgets {

QString OwnRequests::name(int64_t request) const {
  return contains(request) ? QObject::tr("your request %1").arg(request)
                           : QObject::tr("request %1").arg(request);
}

std::vector<chart::LegendEntry> OwnRequests::legend(const std::set<int64_t>& shown,
                                                    const Theme& t, bool compact) const {
  QStringList own;
  bool classmates = false;
  for (int64_t request : shown) {
    if (contains(request)) {
      own << QString::number(request);
    } else {
      classmates = true;
    }
  }
  std::vector<chart::LegendEntry> entries;
  if (!own.isEmpty()) {
    // A long session's many generations are named by their first and last.
    const QString label =
        compact           ? QObject::tr("yours")
        : own.size() == 1 ? QObject::tr("your request %1").arg(own.front())
        : own.size() <= 3 ? QObject::tr("your requests %1").arg(own.join(", "))
                          : QObject::tr("your %1 requests, %2 to %3")
                                .arg(own.size())
                                .arg(own.front(), own.back());
    entries.push_back({label, t.own_request});
  }
  if (classmates) {
    entries.push_back({.label = compact ? QObject::tr("classmates")
                                        : QObject::tr("classmates (hover for the number)"),
                       .color = t.classmate,
                       .lower = t.classmate_alternate});
  }
  return entries;
}

}  // namespace servescope::widgets
