// The "Here and there" table: one row per device (the datasheets' and this machine's, measured),
// each with what the engine's formulas say one model would do there (serving/deployment.h).
// Display text per column, the number itself under Qt::UserRole for sorting, and where each
// figure comes from in the tooltip.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "engine/serving/deployment.h"

namespace servescope::gui {

struct DeploymentRow {
  serving::DeviceSpec device;
  bool measured_here = false;  // this machine: its bandwidth and compute rate from the probe
  serving::DeploymentFigures figures;
};

class DeploymentTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kDevice,
    kMemory,
    kBandwidth,
    kPeak,
    kDecodeFloor,
    kTokensPerSecond,
    kRidge,
    kComputeBatch,
    kRequestsFit,
    kSource,
    kColumnCount
  };

  using QAbstractTableModel::QAbstractTableModel;

  void set_rows(std::vector<DeploymentRow> rows, qint64 context_tokens);
  const std::vector<DeploymentRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  QString text(const DeploymentRow& row, int column) const;
  QVariant number(const DeploymentRow& row, int column) const;
  QString tooltip(const DeploymentRow& row, int column) const;

  std::vector<DeploymentRow> rows_;
  qint64 context_tokens_ = 0;
};

// Batch-1 decode's ceiling in tokens per second: one token per decode floor.
double tokens_per_second_ceiling(const serving::DeploymentFigures& figures);

}  // namespace servescope::gui
