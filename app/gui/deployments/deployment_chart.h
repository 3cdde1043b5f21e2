// Batch-1 decode's ceiling per device as horizontal bars: the table's "Tokens/s, batch 1"
// column drawn, this machine's bar in the highlight colour.
#pragma once

#include <QWidget>
#include <vector>

#include "app/gui/deployments/deployment_table.h"

namespace servescope::gui {

class DeploymentChart : public QWidget {
  Q_OBJECT

 public:
  explicit DeploymentChart(QWidget* parent = nullptr);
  void set_rows(const std::vector<DeploymentRow>& rows);
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Bar {
    QString label;
    double tokens_per_s = 0.0;
    bool measured_here = false;
  };
  std::vector<Bar> bars_;
};

}  // namespace servescope::gui
