#include "widgets/quantisation_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QSignalBlocker>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "widgets/quant_variant_model.h"
#include "widgets/quantisation_charts.h"
#include "widgets/theme.h"
#include "widgets/themed_controls.h"
#include "widgets/token_text.h"

namespace servescope::widgets {

QuantisationPanel::QuantisationPanel(QWidget* parent) : PanelView(parent) {
  setMinimumSize(200, 150);
  model_ = new QuantVariantModel(this);
  histogram_ = new ErrorHistogramView(snapshot_, this);
  sqnr_ = new SqnrBarsView(snapshot_, this);
  continuation_ = new ContinuationView(snapshot_, this);

  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->horizontalHeader()->setMinimumSectionSize(40);
  table_->setWordWrap(false);

  max_kl_enabled_ = new QCheckBox(tr("Max mean KL"), this);
  max_kl_ = new QDoubleSpinBox(this);
  max_kl_->setDecimals(4);
  max_kl_->setRange(0.0, 10.0);
  max_kl_->setSingleStep(0.005);
  max_kl_->setSuffix(tr(" nats"));
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
  min_speedup_->setToolTip(
      tr("Reject variants that decode slower than this multiple of the "
         "baseline's tokens per second (0: no limit)."));
  auto* min_speedup_label = new QLabel(tr("Min decode speed-up"), this);
  min_speedup_label->setToolTip(min_speedup_->toolTip());
  auto* rule = new QLabel(tr("Accept: KL and speed-up within the limits, memory below the "
                             "baseline's."),
                          this);
  rule->setObjectName(QStringLiteral("muted"));

  auto* charts = new QHBoxLayout;
  charts->addWidget(histogram_, 1);
  charts->addWidget(sqnr_, 1);
  auto* limits = new QHBoxLayout;
  limits->addWidget(max_kl_enabled_);
  limits->addWidget(max_kl_);
  limits->addSpacing(16);
  limits->addWidget(min_speedup_label);
  limits->addWidget(min_speedup_);
  limits->addSpacing(16);
  limits->addWidget(rule, 1);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(6, 6, 6, 6);
  column->setSpacing(6);
  column->addLayout(charts, 5);
  column->addLayout(limits);
  column->addWidget(table_);
  column->addWidget(continuation_, 3);

  connect(max_kl_enabled_, &QCheckBox::toggled, this, [this](bool on) {
    max_kl_->setEnabled(on);
    on_limits_edited();
  });
  connect(max_kl_, &QDoubleSpinBox::valueChanged, this, [this] { on_limits_edited(); });
  connect(min_speedup_, &QDoubleSpinBox::valueChanged, this, [this] { on_limits_edited(); });
  set_snapshot({});
}

void QuantisationPanel::set_snapshot(QuantisationSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  model_->set_variants(snapshot_.variants, snapshot_.cost_unit);
  model_->set_limits(snapshot_.limits);
  show_limits(snapshot_.limits);
  // A handful of variants: the table takes the rows it needs, the charts the rest.
  table_->resizeRowsToContents();
  int rows_height = 0;
  for (int row = 0; row < model_->rowCount(); ++row) rows_height += table_->rowHeight(row);
  table_->setMaximumHeight(table_->horizontalHeader()->sizeHint().height() + rows_height +
                           2 * table_->frameWidth() + 2);
  update();
  histogram_->update();
  sqnr_->update();
  continuation_->update();
}

void QuantisationPanel::show_limits(const QuantLimits& limits) {
  const QSignalBlocker block_enabled(max_kl_enabled_);
  const QSignalBlocker block_kl(max_kl_);
  const QSignalBlocker block_speedup(min_speedup_);
  const bool kl_limited = std::isfinite(limits.max_kl);
  max_kl_enabled_->setChecked(kl_limited);
  max_kl_->setEnabled(kl_limited);
  if (kl_limited) max_kl_->setValue(limits.max_kl);
  min_speedup_->setValue(limits.min_speedup);
}

QuantLimits QuantisationPanel::limits() const {
  QuantLimits limits;
  limits.max_kl =
      max_kl_enabled_->isChecked() ? max_kl_->value() : std::numeric_limits<double>::infinity();
  limits.min_speedup = min_speedup_->value();
  return limits;
}

void QuantisationPanel::on_limits_edited() {
  const QuantLimits now = limits();
  model_->set_limits(now);
  emit limits_changed(now.max_kl, now.min_speedup);
}

int64_t QuantisationPanel::first_divergent_token() const {
  return widgets::first_divergent_token(snapshot_.baseline_continuation,
                                        snapshot_.variant_continuation);
}

QString QuantisationPanel::title() const { return tr("Quantisation"); }

QString QuantisationPanel::csv() const {
  QString out = model_->csv();
  out += QStringLiteral("\nbin_low,bin_high,count\n");
  const TensorErrorSnapshot& e = snapshot_.tensor_error;
  if (e.counts.size() == e.edges.size() + 1) {
    for (size_t i = 0; i < e.counts.size(); ++i) {
      const QString low = i == 0 ? QStringLiteral("-inf") : QString::number(e.edges[i - 1], 'g', 9);
      const QString high =
          i == e.edges.size() ? QStringLiteral("inf") : QString::number(e.edges[i], 'g', 9);
      out += QStringLiteral("%1,%2,%3\n").arg(low, high).arg(e.counts[i]);
    }
  }
  out += QStringLiteral("\nlayer,part,sqnr_db\n");
  for (const auto& [list, part] :
       {std::pair{&snapshot_.weight_sqnr, "weights"}, std::pair{&snapshot_.kv_sqnr, "kv_cache"}}) {
    for (const LayerSqnr& l : *list) {
      out += QStringLiteral("%1,%2,%3\n")
                 .arg(csv_field(l.layer), QLatin1String(part))
                 .arg(l.sqnr_db, 0, 'g', 9);
    }
  }
  out += QStringLiteral("\nmodel,token_index,token_id,piece\n");
  for (const TokenContinuation* c :
       {&snapshot_.baseline_continuation, &snapshot_.variant_continuation}) {
    for (size_t i = 0; i < c->pieces.size(); ++i) {
      out += QStringLiteral("%1,%2,%3,%4\n")
                 .arg(csv_field(c->label))
                 .arg(i)
                 .arg(i < c->ids.size() ? QString::number(c->ids[i]) : QString())
                 .arg(csv_field(c->pieces[i]));
    }
  }
  return out;
}

void QuantisationPanel::follow_theme() {
  apply_theme_palette(*this);
  if (auto* rule = findChild<QLabel*>(QStringLiteral("muted"))) {
    if (rule->palette().color(QPalette::WindowText) == theme().muted_text) return;
    QPalette muted = rule->palette();
    muted.setColor(QPalette::WindowText, theme().muted_text);
    rule->setPalette(muted);
  }
}

void QuantisationPanel::paintEvent(QPaintEvent*) {
  follow_theme();
  clear_tooltips();
  QPainter painter(this);
  painter.fillRect(rect(), theme().background);
}

}  // namespace servescope::widgets
