// The quantisation panel: what a lower precision costs in accuracy and buys in memory and
// speed, measured against the baseline. Four parts: the error histogram of one tensor, SQNR per
// layer for weights and KV cache, the variant table judged under limits the user sets, and one
// prompt continued by the baseline and a variant with the first divergent token marked.
#pragma once

#include <QString>

#include "widgets/panel_view.h"
#include "widgets/quantisation_snapshot.h"

class QCheckBox;
class QDoubleSpinBox;
class QTableView;

namespace servescope::widgets {

class ContinuationView;
class ErrorHistogramView;
class QuantVariantModel;
class SqnrBarsView;

class QuantisationPanel : public PanelView {
  Q_OBJECT

 public:
  explicit QuantisationPanel(QWidget* parent = nullptr);

  void set_snapshot(QuantisationSnapshot snapshot);
  const QuantisationSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override { return {"variants", "error"}; }
  // Long form, one number per row (part,item,quantity,value,unit): every variant's columns
  // (verdicts under the current limits), the histogram bins, SQNR per layer, both
  // continuations' tokens.
  QString csv() const override;
  QSize minimumSizeHint() const override;

  // The parts, for tests and the app.
  const QuantVariantModel& variant_model() const { return *model_; }
  QuantLimits limits() const;
  int64_t first_divergent_token() const;
  QDoubleSpinBox* max_kl_control() const { return max_kl_; }
  QCheckBox* max_kl_enabled_control() const { return max_kl_enabled_; }
  QDoubleSpinBox* min_speedup_control() const { return min_speedup_; }
  const ErrorHistogramView& histogram_view() const { return *histogram_; }
  const SqnrBarsView& sqnr_view() const { return *sqnr_; }
  const ContinuationView& continuation_view() const { return *continuation_; }

 Q_SIGNALS:
  // The user changed a limit; the table's verdicts already follow. max_kl is infinity when
  // the KL limit is off.
  void limits_changed(double max_kl, double min_speedup);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void show_limits(const QuantLimits& limits);
  void on_limits_edited();
  void follow_theme();

  QuantisationSnapshot snapshot_;
  QuantVariantModel* model_ = nullptr;
  QTableView* table_ = nullptr;
  QCheckBox* max_kl_enabled_ = nullptr;
  QDoubleSpinBox* max_kl_ = nullptr;
  QDoubleSpinBox* min_speedup_ = nullptr;
  ErrorHistogramView* histogram_ = nullptr;
  SqnrBarsView* sqnr_ = nullptr;
  ContinuationView* continuation_ = nullptr;
};

}  // namespace servescope::widgets
