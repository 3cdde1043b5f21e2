// The quantisation variants as a Qt table model: one row per (weight type, KV type) variant,
// its measured costs and quality, and the verdict under the user's current limits.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "widgets/quantisation_snapshot.h"

namespace servescope::widgets {

class QuantVariantModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kWeights,
    kKvCache,
    kSize,
    kBitsPerWeight,
    kMeanKl,
    kTop1,
    kDecode,
    kSpeedup,
    kTtft,
    kTpot,
    kCost,
    kVerdict,
    kColumnCount
  };

  explicit QuantVariantModel(QObject* parent = nullptr);

  // judge: the accept-only-if rule (QuantJudge); rows are not judged without one.
  void set_variants(std::vector<QuantVariantRow> variants, QString cost_unit, QuantJudge judge);
  void set_limits(const QuantLimits& limits);  // re-judges every row
  const QuantLimits& limits() const { return limits_; }
  const std::vector<QuantVariantRow>& variants() const { return variants_; }
  // The verdict of row `row` under the current limits; the baseline is never judged, and no
  // row is without a rule (rejected, no reasons).
  QuantVerdict verdict(int row) const;
  bool judged() const { return static_cast<bool>(judge_); }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // The table as CSV: the header row, then one row per variant (numbers unrounded).
  QString csv() const;

 private:
  QString header_text(int column) const;
  QString cell_text(const QuantVariantRow& row, int column, int row_index) const;

  std::vector<QuantVariantRow> variants_;
  QString cost_unit_;
  QuantJudge judge_;
  QuantLimits limits_;
};

}  // namespace servescope::widgets
