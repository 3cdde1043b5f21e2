#include "widgets/quantisation_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "widgets/quant_block_view.h"
#include "widgets/quant_variant_model.h"
#include "widgets/quantisation_charts.h"
#include "widgets/theme.h"
#include "widgets/themed_controls.h"
#include "widgets/token_text.h"

namespace servescope::widgets {
namespace {

// Charts: the tab bar, a heading, the statistics line, a plot of four lines, its ticks and
// axis title.
constexpr double kChartsLines = 11.0;
// The block tab: its type row, a heading, the bytes bar, the scales, a legend, the quants'
// row, a plot of five lines with its ticks and title, the block's error.
constexpr double kBlockLines = 19.0;
constexpr double kNoteLines = 1.4;  // the line naming the parts left out
constexpr int kMinimumWidth = 640;

}  // namespace

QStringList QuantParts::hidden() const {
  QStringList names;
  if (!charts) names << QuantisationPanel::tr("charts");
  if (!table) names << QuantisationPanel::tr("variant table");
  if (!continuation) names << QuantisationPanel::tr("token comparison");
  if (!controls) names << QuantisationPanel::tr("controls");
  return names;
}

QuantParts choose_quant_parts(const QuantPartNeeds& needs, double room_lines,
                              const QString& highlight) {
  QuantParts parts;
  if (needs.charts + needs.table + needs.continuation + needs.controls <= room_lines) {
    return {true, true, true, true};
  }
  std::vector<std::pair<bool*, double>> order = {{&parts.charts, needs.charts},
                                                 {&parts.table, needs.table},
                                                 {&parts.continuation, needs.continuation},
                                                 {&parts.controls, needs.controls}};
  if (highlight == QStringLiteral("variants")) std::swap(order[0], order[1]);
  double left = room_lines - kNoteLines;
  for (size_t i = 0; i < order.size(); ++i) {
    auto [shown, need] = order[i];
    // The first part is shown whatever it needs: below its room the panel asks for more.
    if (i == 0 || need <= left) {
      *shown = true;
      left -= need;
    }
  }
  return parts;
}

QuantisationPanel::QuantisationPanel(QWidget* parent) : PanelView(parent) {
  model_ = new QuantVariantModel(this);
  continuation_ = new ContinuationView(snapshot_, this);

  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Every number whole: columns fit their contents, the table scrolls sideways when narrow.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
  table_->setWordWrap(false);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(build_error_page(), tr("Error per layer"));
  tabs_->addTab(build_block_page(), tr("Inside a block"));
  // The block tab needs more room than the charts: the parts shown follow the tab.
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { fit_parts(); });
  tabs_->setToolTip(
      tr("Error per layer: how far the quantised weights are from the originals. Inside a "
         "block: how one block of this model's weights is stored, number by number."));

  max_kl_enabled_ = new QCheckBox(tr("Max mean KL"), this);
  max_kl_ = new QDoubleSpinBox(this);
  max_kl_->setDecimals(4);
  max_kl_->setRange(0.0, 10.0);
  max_kl_->setSingleStep(0.005);
  max_kl_->setSuffix(tr(" nats"));
  max_tpot_enabled_ = new QCheckBox(tr("Max TPOT p99"), this);
  max_tpot_ = new QDoubleSpinBox(this);
  max_tpot_->setDecimals(1);
  max_tpot_->setRange(0.1, 10000.0);
  max_tpot_->setSingleStep(1.0);
  max_tpot_->setValue(50.0);
  max_tpot_->setSuffix(tr(" ms"));
  min_speedup_ = new QDoubleSpinBox(this);
  min_speedup_->setDecimals(2);
  min_speedup_->setRange(0.0, 100.0);
  min_speedup_->setSingleStep(0.05);
  min_speedup_->setSuffix(QStringLiteral(" x"));
  const QString kl_tip =
      tr("Reject variants whose mean KL divergence from the baseline's "
         "next-token distributions is above this.");
  max_kl_enabled_->setToolTip(kl_tip);
  max_kl_->setToolTip(kl_tip);
  const QString tpot_tip =
      tr("Reject variants whose 99th-percentile time per output token under the fixed load is "
         "above this.");
  max_tpot_enabled_->setToolTip(tpot_tip);
  max_tpot_->setToolTip(tpot_tip);
  min_speedup_->setToolTip(
      tr("Reject variants that decode slower than this multiple of the "
         "baseline's tokens per second (0: no limit)."));
  auto* min_speedup_label = new QLabel(tr("Min speed-up"), this);
  min_speedup_label->setToolTip(min_speedup_->toolTip());
  min_speedup_label->setBuddy(min_speedup_);
  auto* rule = new QLabel(tr("Accept a variant when it is within every limit you set and needs "
                             "less memory than F32 (quant-report's rule)."),
                          this);
  rule->setWordWrap(true);
  rule->setObjectName(QStringLiteral("muted"));

  auto* limits = new QHBoxLayout;
  limits->addWidget(max_kl_enabled_);
  limits->addWidget(max_kl_);
  limits->addSpacing(12);
  limits->addWidget(max_tpot_enabled_);
  limits->addWidget(max_tpot_);
  limits->addSpacing(12);
  limits->addWidget(min_speedup_label);
  limits->addWidget(min_speedup_);
  limits->addStretch(1);
  controls_ = new QWidget(this);
  auto* controls = new QVBoxLayout(controls_);
  controls->setContentsMargins(0, 0, 0, 0);
  controls->setSpacing(6);
  controls->addLayout(build_run_row());
  controls->addLayout(limits);
  controls->addWidget(rule);
  hidden_note_ = new QLabel(this);
  hidden_note_->setObjectName(QStringLiteral("muted"));
  hidden_note_->setToolTip(tr("A taller window shows every part."));
  hidden_note_->hide();
  auto* column = new QVBoxLayout(this);
  column->setSizeConstraint(QLayout::SetNoConstraint);  // minimumSizeHint() says the minimum
  column->setContentsMargins(6, 6, 6, 6);
  column->setSpacing(6);
  // The table, the controls and the continuations take the height they need; the tabs the rest.
  column->addWidget(tabs_, 1);
  column->addWidget(controls_);
  column->addWidget(table_);
  column->addWidget(continuation_);
  column->addWidget(hidden_note_);

  connect(max_kl_enabled_, &QCheckBox::toggled, this, [this](bool on) {
    max_kl_->setEnabled(on);
    on_limits_edited();
  });
  connect(max_tpot_enabled_, &QCheckBox::toggled, this, [this](bool on) {
    max_tpot_->setEnabled(on);
    on_limits_edited();
  });
  connect(max_kl_, &QDoubleSpinBox::valueChanged, this, [this] { on_limits_edited(); });
  connect(max_tpot_, &QDoubleSpinBox::valueChanged, this, [this] { on_limits_edited(); });
  connect(min_speedup_, &QDoubleSpinBox::valueChanged, this, [this] { on_limits_edited(); });
  show_limits(snapshot_.limits);
  set_snapshot({});
}

QWidget* QuantisationPanel::build_error_page() {
  auto* page = new QWidget(this);
  histogram_ = new ErrorHistogramView(snapshot_, page);
  sqnr_ = new SqnrBarsView(snapshot_, page);
  auto* charts = new QHBoxLayout(page);
  charts->setContentsMargins(0, 0, 0, 0);
  charts->addWidget(histogram_, 1);
  charts->addWidget(sqnr_, 1);
  return page;
}

QWidget* QuantisationPanel::build_block_page() {
  auto* page = new QWidget(this);
  block_type_ = new QComboBox(page);
  block_type_->setToolTip(tr("The block type whose storage the picture shows."));
  block_ = new QuantBlockView(snapshot_, page);
  auto* label = new QLabel(tr("Block type"), page);
  label->setToolTip(block_type_->toolTip());
  label->setBuddy(block_type_);
  auto* top = new QHBoxLayout;
  top->addWidget(label);
  top->addWidget(block_type_);
  top->addStretch(1);
  auto* column = new QVBoxLayout(page);
  column->setContentsMargins(0, 4, 0, 0);
  column->addLayout(top);
  column->addWidget(block_, 1);
  connect(block_type_, &QComboBox::currentTextChanged, this,
          [this](const QString& type) { block_->set_type(type); });
  return page;
}

QLayout* QuantisationPanel::build_run_row() {
  auto* label = new QLabel(tr("Compare with F32:"), this);
  label->setToolTip(
      tr("The weight types to measure against the F32 baseline: quality on a text, speed, "
         "latency and cost under a fixed load."));
  type_grid_ = new QGridLayout;
  type_grid_->setHorizontalSpacing(10);
  type_grid_->setVerticalSpacing(2);
  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setToolTip(tr("Measure the checked weight types against the F32 baseline."));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setToolTip(tr("Stop the comparison at its next step; the last results stay."));
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setTextVisible(false);
  progress_->setMaximumWidth(160);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("muted"));
  status_->setMinimumWidth(40);  // one line, elided by its width; the whole text in its tooltip
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  connect(compare_, &QPushButton::clicked, this,
          [this] { emit compare_requested(checked_types()); });
  connect(cancel_, &QPushButton::clicked, this, [this] { emit cancel_requested(); });
  // Label, buttons, progress and status on one line; the type boxes in a grid under it.
  auto* top = new QHBoxLayout;
  top->addWidget(label);
  top->addWidget(compare_);
  top->addWidget(cancel_);
  top->addWidget(progress_);
  top->addWidget(status_, 1);
  auto* boxes = new QHBoxLayout;
  boxes->addLayout(type_grid_);
  boxes->addStretch(1);
  auto* rows = new QVBoxLayout;
  rows->setSpacing(2);
  rows->addLayout(top);
  rows->addLayout(boxes);
  return rows;
}

void QuantisationPanel::set_snapshot(QuantisationSnapshot snapshot) {
  // The limits are the user's once set: a snapshot changes them only when it brings others.
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  const bool new_limits = !same(snapshot.limits.max_kl, snapshot_.limits.max_kl) ||
                          !same(snapshot.limits.max_tpot_ms, snapshot_.limits.max_tpot_ms) ||
                          !same(snapshot.limits.min_speedup, snapshot_.limits.min_speedup);
  const bool new_choices = snapshot.type_choices != snapshot_.type_choices ||
                           snapshot.chosen_types != snapshot_.chosen_types ||
                           snapshot.blocks.size() != snapshot_.blocks.size();
  snapshot_ = std::move(snapshot);
  if (new_choices || type_boxes_.empty()) show_type_choices();
  if (new_limits) show_limits(snapshot_.limits);
  show_run();
  model_->set_variants(snapshot_.variants, snapshot_.cost_unit, snapshot_.judge);
  model_->set_limits(limits());
  // One KV type for every row (the lab's case): its column says nothing.
  bool one_kv_type = true;
  for (const QuantVariantRow& row : snapshot_.variants) {
    one_kv_type = one_kv_type && row.kv_type == snapshot_.variants.front().kv_type;
  }
  one_kv_type_ = one_kv_type;
  block_->set_type(block_type_->currentText());
  fit_table();
  fit_parts();
  update();
  histogram_->update();
  sqnr_->update();
  block_->update();
  continuation_->update();
}

void QuantisationPanel::show_type_choices() {
  for (QCheckBox* box : type_boxes_) delete box;
  type_boxes_.clear();
  constexpr int kColumns = 8;
  for (const QString& type : snapshot_.type_choices) {
    auto* box = new QCheckBox(type, this);
    box->setObjectName(QStringLiteral("type-") + type);
    box->setChecked(snapshot_.chosen_types.contains(type));
    box->setToolTip(tr("Include %1 weights in the comparison.").arg(type));
    const int i = static_cast<int>(type_boxes_.size());
    type_grid_->addWidget(box, i / kColumns, i % kColumns);
    type_boxes_.push_back(box);
  }
  // The block tab offers the types that have a block picture, in the snapshot's order.
  const QString shown = block_type_->currentText();
  const QSignalBlocker block(block_type_);
  block_type_->clear();
  for (const QuantBlockSnapshot& b : snapshot_.blocks) block_type_->addItem(b.type);
  const int keep = block_type_->findText(shown);
  block_type_->setCurrentIndex(keep >= 0 ? keep : 0);
}

void QuantisationPanel::set_run_state(const QuantRunState& run) {
  snapshot_.run = run;
  show_run();
}

void QuantisationPanel::show_run() {
  const QuantRunState& run = snapshot_.run;
  compare_->setEnabled(!run.running && !snapshot_.type_choices.isEmpty());
  cancel_->setEnabled(run.running);
  progress_->setVisible(run.running);
  progress_->setValue(static_cast<int>(std::lround(1000.0 * std::clamp(run.fraction, 0.0, 1.0))));
  for (QCheckBox* box : type_boxes_) box->setEnabled(!run.running);
  QString text;
  if (run.running) {
    text = tr("Measuring: %1 (%2%)").arg(run.stage).arg(std::lround(100.0 * run.fraction));
  } else if (!run.outcome.isEmpty()) {
    text = run.outcome;
  } else if (!snapshot_.load.isEmpty()) {
    text = tr("Latency and cost under the fixed load: %1").arg(snapshot_.load);
  }
  status_->setToolTip(text);
  status_->setText(
      status_->fontMetrics().elidedText(text, Qt::ElideRight, std::max(40, status_->width())));
  status_text_ = text;
}

QStringList QuantisationPanel::checked_types() const {
  QStringList types;
  for (const QCheckBox* box : type_boxes_) {
    if (box->isChecked()) types << box->text();
  }
  return types;
}

QCheckBox* QuantisationPanel::type_control(const QString& type) const {
  for (QCheckBox* box : type_boxes_) {
    if (box->text() == type) return box;
  }
  return nullptr;
}

bool QuantisationPanel::show_block(const QString& type) {
  const int index = block_type_->findText(type);
  if (index < 0) return false;
  block_type_->setCurrentIndex(index);
  tabs_->setCurrentIndex(1);
  return true;
}

void QuantisationPanel::show_limits(const QuantLimits& limits) {
  const QSignalBlocker block_enabled(max_kl_enabled_);
  const QSignalBlocker block_kl(max_kl_);
  const QSignalBlocker block_tpot_enabled(max_tpot_enabled_);
  const QSignalBlocker block_tpot(max_tpot_);
  const QSignalBlocker block_speedup(min_speedup_);
  const bool kl_limited = std::isfinite(limits.max_kl);
  max_kl_enabled_->setChecked(kl_limited);
  max_kl_->setEnabled(kl_limited);
  if (kl_limited) max_kl_->setValue(limits.max_kl);
  const bool tpot_limited = std::isfinite(limits.max_tpot_ms);
  max_tpot_enabled_->setChecked(tpot_limited);
  max_tpot_->setEnabled(tpot_limited);
  if (tpot_limited) max_tpot_->setValue(limits.max_tpot_ms);
  min_speedup_->setValue(limits.min_speedup);
}

QuantLimits QuantisationPanel::limits() const {
  QuantLimits limits;
  constexpr double kOff = std::numeric_limits<double>::infinity();
  limits.max_kl = max_kl_enabled_->isChecked() ? max_kl_->value() : kOff;
  limits.max_tpot_ms = max_tpot_enabled_->isChecked() ? max_tpot_->value() : kOff;
  limits.min_speedup = min_speedup_->value();
  return limits;
}

void QuantisationPanel::on_limits_edited() {
  const QuantLimits now = limits();
  model_->set_limits(now);
  emit limits_changed(now.max_kl, now.max_tpot_ms, now.min_speedup);
}

int64_t QuantisationPanel::first_divergent_token() const {
  return widgets::first_divergent_token(snapshot_.baseline_continuation,
                                        snapshot_.variant_continuation);
}

QString QuantisationPanel::title() const { return tr("Quantisation"); }

// Room for the charts and the line naming the parts left out: at any height above, the panel
// shows what fits (fit_parts).
QSize QuantisationPanel::minimumSizeHint() const {
  const double line = QFontMetricsF(font()).height();
  return {kMinimumWidth, static_cast<int>(std::ceil(line * (kChartsLines + kNoteLines) + 12))};
}

void QuantisationPanel::fit_table_columns() {
  table_->setColumnHidden(QuantVariantModel::kKvCache, one_kv_type_);
  // Narrower than its columns (24 px type at 1280 px): the figures a class needs least go,
  // their values still in the CSV and the other columns' tooltips.
  constexpr int kLeastNeeded[] = {QuantVariantModel::kCost, QuantVariantModel::kTtft,
                                  QuantVariantModel::kBitsPerWeight, QuantVariantModel::kTop1};
  for (const int column : kLeastNeeded) table_->setColumnHidden(column, false);
  table_->resizeColumnsToContents();
  const int room = width() - 12 - 2 * table_->frameWidth();
  const auto needed = [this] {
    int total = 0;
    for (int column = 0; column < model_->columnCount(); ++column) {
      if (!table_->isColumnHidden(column)) {
        total += table_->horizontalHeader()->sectionSizeHint(column);
      }
    }
    return total;
  };
  for (const int column : kLeastNeeded) {
    if (needed() <= room) break;
    table_->setColumnHidden(column, true);
  }
}

void QuantisationPanel::fit_table() {
  fit_table_columns();
  // A handful of variants: the table takes the rows it needs, the charts the rest.
  const int row_height = static_cast<int>(std::ceil(QFontMetricsF(font()).height() * 1.3));
  table_->verticalHeader()->setMinimumSectionSize(row_height);
  table_->verticalHeader()->setDefaultSectionSize(row_height);
  table_->resizeRowsToContents();
  int rows_height = 0;
  for (int row = 0; row < model_->rowCount(); ++row) rows_height += table_->rowHeight(row);
  const int scrollbar = table_->horizontalHeader()->length() > table_->viewport()->width()
                            ? table_->horizontalScrollBar()->sizeHint().height()
                            : 0;
  table_->setFixedHeight(table_->horizontalHeader()->sizeHint().height() + rows_height + scrollbar +
                         2 * table_->frameWidth() + 2);
}

QuantPartNeeds QuantisationPanel::part_needs() const {
  const double line = QFontMetricsF(font()).height();
  const double spacing = 6.0;
  const auto lines = [line, spacing](int pixels) { return (pixels + spacing) / line; };
  const int controls_height = controls_->layout()->hasHeightForWidth()
                                  ? controls_->layout()->heightForWidth(width() - 12)
                                  : controls_->sizeHint().height();
  const bool block_tab = tabs_->currentIndex() == 1;
  return {block_tab ? kBlockLines : kChartsLines, lines(table_->height()), lines(continuation_->sizeHint().height()),
          lines(controls_height)};
}

void QuantisationPanel::fit_parts() {
  const double line = QFontMetricsF(font()).height();
  const QSize minimum = minimumSizeHint();
  // Too small for any part: they give way to the message asking for room.
  if (width() < minimum.width() || height() < minimum.height()) {
    show_controls(*this, false);
    return;
  }
  parts_ = choose_quant_parts(part_needs(), (height() - 12) / line, highlight());
  tabs_->setVisible(parts_.charts);
  table_->setVisible(parts_.table);
  continuation_->setVisible(parts_.continuation);
  controls_->setVisible(parts_.controls);
  hidden_note_->setText(tr("Not shown for room: %1").arg(parts_.hidden().join(tr(", "))));
  hidden_note_->setVisible(!parts_.all());
  // Without the charts, the table or the comparison takes the height the tabs had.
  if (auto* column = qobject_cast<QVBoxLayout*>(layout())) {
    column->setStretchFactor(continuation_, parts_.charts ? 0 : 1);
    column->activate();  // the parts' places now: this paint (or a render) already uses them
  }
}

void QuantisationPanel::resizeEvent(QResizeEvent* event) {
  status_->setText(status_->fontMetrics().elidedText(status_text_, Qt::ElideRight,
                                                     std::max(40, status_->width())));
  fit_table();  // a wider panel may need no scroll bar under the table
  fit_parts();
  PanelView::resizeEvent(event);
}

void QuantisationPanel::changeEvent(QEvent* event) {
  if (event->type() == QEvent::FontChange) {
    fit_table();
    fit_parts();
    updateGeometry();  // the minimum is counted in lines of the font
  }
  PanelView::changeEvent(event);
}

QString QuantisationPanel::csv() const {
  // Four parts of different shapes in one table: one row per number (long form), so every row
  // has the same columns and a spreadsheet can pivot it back.
  QString out = QStringLiteral("part,item,quantity,value,unit\n");
  const auto add = [&out](const QString& part, const QString& item, const QString& quantity,
                          const QString& value, const QString& unit) {
    out += QStringList{part, csv_field(item), quantity, csv_field(value), csv_field(unit)}.join(
               QLatin1Char(',')) +
           QLatin1Char('\n');
  };
  const auto number = [](double v) { return QString::number(v, 'g', 9); };
  const QString variant = QStringLiteral("variant");
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QuantVariantRow& v = model_->variants()[r];
    const QString item =
        v.weight_type + QStringLiteral(" weights / ") + v.kv_type + QStringLiteral(" KV");
    const QuantVariantRow& base = *baseline_of(model_->variants());
    add(variant, item, QStringLiteral("weights"), number(v.weight_bytes), QStringLiteral("bytes"));
    add(variant, item, QStringLiteral("bits per weight"), number(v.bits_per_weight),
        QStringLiteral("bits"));
    add(variant, item, QStringLiteral("memory"), number(v.memory_bytes), QStringLiteral("bytes"));
    add(variant, item, QStringLiteral("prefill"), number(v.prefill_tokens_per_s),
        QStringLiteral("tokens/s"));
    add(variant, item, QStringLiteral("decode"), number(v.decode_tokens_per_s),
        QStringLiteral("tokens/s"));
    add(variant, item, QStringLiteral("decode speed-up"), number(decode_speedup(v, base)),
        QStringLiteral("x"));
    for (const auto& [quantity, value] :
         {std::pair{"TTFT p50", v.ttft_p50_ms}, std::pair{"TTFT p99", v.ttft_p99_ms},
          std::pair{"TPOT p50", v.tpot_p50_ms}, std::pair{"TPOT p99", v.tpot_p99_ms}}) {
      add(variant, item, QLatin1String(quantity), number(value), QStringLiteral("ms"));
    }
    add(variant, item, QStringLiteral("cost per request"), number(v.cost_per_request),
        snapshot_.cost_unit);
    add(variant, item, QStringLiteral("perplexity"), number(v.perplexity), QString());
    add(variant, item, QStringLiteral("mean KL"), number(v.mean_kl), QStringLiteral("nats"));
    add(variant, item, QStringLiteral("top-1 agreement"), number(v.top1_agreement),
        QStringLiteral("fraction"));
    add(variant, item, QStringLiteral("verdict"),
        model_->index(r, QuantVariantModel::kVerdict).data().toString(), QString());
  }
  if (const QuantBlockSnapshot* shown = block_->block()) {  // the block the tab shows
    const QuantBlockSnapshot& b = *shown;
    const QString item = QStringLiteral("%1 %2 row %3 from column %4")
                             .arg(b.tensor, b.type)
                             .arg(b.row)
                             .arg(b.first_column);
    const QString block = QStringLiteral("block");
    add(block, item, QStringLiteral("d"), number(b.d), QString());
    if (b.has_min) add(block, item, QStringLiteral("m"), number(b.m), QString());
    for (const QuantSubBlock& sub : b.sub_blocks) {
      const QString at = QStringLiteral("sub-block at %1").arg(sub.first);
      add(block, item, at + QStringLiteral(" scale"), number(sub.scale), QString());
      if (b.has_min) add(block, item, at + QStringLiteral(" min"), number(sub.min), QString());
    }
    for (size_t i = 0; i < b.originals.size(); ++i) {
      const QString at = QStringLiteral("element %1 ").arg(i);
      add(block, item, at + QStringLiteral("original"), number(b.originals[i]), QString());
      if (i < b.quants.size()) {
        add(block, item, at + QStringLiteral("quant"), QString::number(b.quants[i]), QString());
      }
      if (i < b.reconstructed.size()) {
        add(block, item, at + QStringLiteral("decoded"), number(b.reconstructed[i]), QString());
      }
    }
  }
  const TensorErrorSnapshot& e = snapshot_.tensor_error;
  if (e.counts.size() == e.edges.size() + 1) {
    for (size_t i = 0; i < e.counts.size(); ++i) {
      const QString low = i == 0 ? QStringLiteral("-inf") : number(e.edges[i - 1]);
      const QString high = i == e.edges.size() ? QStringLiteral("inf") : number(e.edges[i]);
      add(QStringLiteral("error histogram"),
          QStringLiteral("%1 %2 from %3 to %4").arg(e.tensor, e.type, low, high),
          QStringLiteral("count"), QString::number(e.counts[i]), QStringLiteral("elements"));
    }
  }
  for (const auto& [list, part] :
       {std::pair{&snapshot_.weight_sqnr, "weights"}, std::pair{&snapshot_.kv_sqnr, "KV cache"}}) {
    for (const LayerSqnr& l : *list) {
      add(QStringLiteral("SQNR"), l.layer + QLatin1Char(' ') + QLatin1String(part),
          QStringLiteral("SQNR"), number(l.sqnr_db), QStringLiteral("dB"));
    }
  }
  for (const TokenContinuation* c :
       {&snapshot_.baseline_continuation, &snapshot_.variant_continuation}) {
    for (size_t i = 0; i < c->pieces.size(); ++i) {
      const QString item = QStringLiteral("%1 token %2").arg(c->label).arg(i);
      add(QStringLiteral("continuation"), item, QStringLiteral("piece"), c->pieces[i], QString());
      if (i < c->ids.size()) {
        add(QStringLiteral("continuation"), item, QStringLiteral("id"), QString::number(c->ids[i]),
            QString());
      }
    }
  }
  return out;
}

void QuantisationPanel::follow_theme() {
  apply_theme_palette(*this);
  for (QLabel* label : findChildren<QLabel*>(QStringLiteral("muted"))) {
    if (label->palette().color(QPalette::WindowText) == theme().muted_text) continue;
    QPalette muted = label->palette();
    muted.setColor(QPalette::WindowText, theme().muted_text);
    label->setPalette(muted);
  }
}

void QuantisationPanel::paintEvent(QPaintEvent*) {
  follow_theme();
  clear_tooltips();
  // A lesson's highlight picks which part keeps its place when not every part fits.
  if (choose_quant_parts(part_needs(), (height() - 12) / QFontMetricsF(font()).height(),
                         highlight()) != parts_) {
    fit_parts();
  }
  QPainter painter(this);
  if (paint_if_too_small(painter, minimumSizeHint())) return;
  painter.fillRect(rect(), theme().background);
  // The parts are child widgets: their places, in this panel's coordinates.
  const auto place = [this](const QWidget* part) {
    return QRectF(QRect(part->mapTo(this, QPoint(0, 0)), part->size()));
  };
  if (parts_.table) mark_element(QStringLiteral("variants"), place(table_));
  if (parts_.charts) mark_element(QStringLiteral("error"), place(histogram_));
}

}  // namespace servescope::widgets
