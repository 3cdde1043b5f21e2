// Stands in for a panel whose view is not built yet: it says so, and lists the measured
// figures the app already folds for it, so the tab is never blank or misleading.
#pragma once

#include <QStringList>

#include "widgets/panel_view.h"

namespace servescope::gui {

class PendingPanel : public widgets::PanelView {
  Q_OBJECT

 public:
  PendingPanel(QString title, QString purpose, QWidget* parent = nullptr);

  // Figure lines ("steps: 12", ...) shown under the purpose; empty: the empty state.
  void set_lines(QStringList lines);
  const QStringList& lines() const { return lines_; }

  QString title() const override { return title_; }
  QString csv() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QString title_;
  QString purpose_;
  QStringList lines_;
};

}  // namespace servescope::gui
