// The quantisation panel: what a lower precision costs in accuracy and buys in memory and
// speed, measured against the baseline. Its parts: two tabs (the error histogram of one tensor
// with SQNR per layer for weights and KV cache; one block of the weights as each block type
// stores it), the variants to compare with the run's progress and a Cancel button, the variant
// table judged under limits the user sets, and one prompt continued by the baseline and a
// variant with the first divergent token marked.
#pragma once

#include <QString>
#include <vector>

#include "widgets/panel_view.h"
#include "widgets/quantisation_snapshot.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;

namespace servescope::widgets {

class ContinuationView;
class ErrorHistogramView;
class QuantBlockView;
class QuantVariantModel;
class SqnrBarsView;

// The panel's parts and the room each needs, in lines of the panel's font: the charts (error
// histogram and SQNR, or a block), the variant table, the token comparison, the controls (run,
// limits, rule).
struct QuantPartNeeds {
  double charts = 0.0;
  double table = 0.0;
  double continuation = 0.0;
  double controls = 0.0;
};
struct QuantParts {
  bool charts = false;
  bool table = false;
  bool continuation = false;
  bool controls = false;
  bool all() const { return charts && table && continuation && controls; }
  // The parts left out, named for the line that says so ("variant table, controls").
  QStringList hidden() const;
  bool operator==(const QuantParts&) const = default;
};
// Which parts fit `room_lines`: all when they do, else in order of need (the charts, the
// table, the token comparison, the controls) those that fit beside a line naming the others.
// The part the lesson highlights ("variants": the table, "error": the charts) comes first.
QuantParts choose_quant_parts(const QuantPartNeeds& needs, double room_lines,
                              const QString& highlight);

class QuantisationPanel : public PanelView {
  Q_OBJECT

 public:
  explicit QuantisationPanel(QWidget* parent = nullptr);

  void set_snapshot(QuantisationSnapshot snapshot);
  // Progress of a run alone (the results shown stay as they are).
  void set_run_state(const QuantRunState& run);
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
  QCheckBox* max_tpot_enabled_control() const { return max_tpot_enabled_; }
  QDoubleSpinBox* max_tpot_control() const { return max_tpot_; }
  // The variant choice: one box per type in the snapshot's type_choices.
  QStringList checked_types() const;
  QCheckBox* type_control(const QString& type) const;
  QPushButton* compare_control() const { return compare_; }
  QPushButton* cancel_control() const { return cancel_; }
  QProgressBar* progress_control() const { return progress_; }
  QLabel* status_control() const { return status_; }
  QString status_text() const { return status_text_; }
  // The tabs: 0 error per layer, 1 inside a block; the block type shown in the block tab.
  QTabWidget* tabs_control() const { return tabs_; }
  QComboBox* block_type_control() const { return block_type_; }
  bool show_block(const QString& type);  // false when the snapshot has no block of that type
  const QuantBlockView& block_view() const { return *block_; }
  const ErrorHistogramView& histogram_view() const { return *histogram_; }
  const SqnrBarsView& sqnr_view() const { return *sqnr_; }
  const ContinuationView& continuation_view() const { return *continuation_; }
  // The parts shown for the room the panel has now, and the line naming those left out.
  QuantParts shown_parts() const { return parts_; }
  QLabel* hidden_parts_control() const { return hidden_note_; }

 Q_SIGNALS:
  // The user changed a limit; the table's verdicts already follow. max_kl and max_tpot_ms are
  // infinity when their limit is off.
  void limits_changed(double max_kl, double max_tpot_ms, double min_speedup);
  // Compare: run the comparison of these weight types against the baseline.
  void compare_requested(const QStringList& types);
  void cancel_requested();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void show_limits(const QuantLimits& limits);
  void show_type_choices();
  void show_run();
  void on_limits_edited();
  void follow_theme();
  // Rows as tall as their font needs, the table as tall as its rows.
  void fit_table();
  void fit_table_columns();  // hides the least needed columns when the table is too wide
  // Shows the parts that fit the panel's height (all of them, when it is too small for any:
  // the message asking for room covers them).
  void fit_parts();
  QuantPartNeeds part_needs() const;
  QWidget* build_error_page();
  QWidget* build_block_page();
  QLayout* build_run_row();

  QuantisationSnapshot snapshot_;
  QuantVariantModel* model_ = nullptr;
  QTableView* table_ = nullptr;
  QCheckBox* max_kl_enabled_ = nullptr;
  QDoubleSpinBox* max_kl_ = nullptr;
  QDoubleSpinBox* min_speedup_ = nullptr;
  QCheckBox* max_tpot_enabled_ = nullptr;
  QDoubleSpinBox* max_tpot_ = nullptr;
  QGridLayout* type_grid_ = nullptr;
  std::vector<QCheckBox*> type_boxes_;
  QPushButton* compare_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QString status_text_;  // the status label's whole text (the label elides it)
  QTabWidget* tabs_ = nullptr;
  QComboBox* block_type_ = nullptr;
  QuantBlockView* block_ = nullptr;
  ErrorHistogramView* histogram_ = nullptr;
  SqnrBarsView* sqnr_ = nullptr;
  ContinuationView* continuation_ = nullptr;
  QWidget* controls_ = nullptr;   // the run row, the limits and the rule
  QLabel* hidden_note_ = nullptr;  // "Not shown for room: ..."
  QuantParts parts_{true, true, true, true};
  bool one_kv_type_ = true;  // one KV type in every row: its column says nothing
};

}  // namespace servescope::widgets
