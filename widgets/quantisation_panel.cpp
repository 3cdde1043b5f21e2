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
namespace {

constexpr QSize kMinimumSize(640, 480);

}  // namespace

QuantisationPanel::QuantisationPanel(QWidget* parent) : PanelView(parent) {
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
  auto* rule = new QLabel(tr("Accept: within both limits and smaller than the baseline."), this);
  rule->setWordWrap(true);
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
  column->setSizeConstraint(QLayout::SetNoConstraint);  // minimumSizeHint() says the minimum
  column->setContentsMargins(6, 6, 6, 6);
  column->setSpacing(6);
  // The table and the continuations take the height they need; the charts the rest.
  column->addLayout(charts, 1);
  column->addLayout(limits);
  column->addWidget(table_);
  column->addWidget(continuation_);

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
  table_->setFixedHeight(table_->horizontalHeader()->sizeHint().height() + rows_height +
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

QSize QuantisationPanel::minimumSizeHint() const { return kMinimumSize; }

void QuantisationPanel::resizeEvent(QResizeEvent* event) {
  // Too small for its parts: they give way to the message asking for room.
  show_controls(*this, width() >= kMinimumSize.width() && height() >= kMinimumSize.height());
  PanelView::resizeEvent(event);
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
    add(variant, item, QStringLiteral("memory"), number(v.memory_mb), QStringLiteral("MB"));
    add(variant, item, QStringLiteral("prefill"), number(v.prefill_tokens_per_s),
        QStringLiteral("tokens/s"));
    add(variant, item, QStringLiteral("decode"), number(v.decode_tokens_per_s),
        QStringLiteral("tokens/s"));
    add(variant, item, QStringLiteral("decode speed-up"), number(decode_speedup(v, base)),
        QStringLiteral("x"));
    add(variant, item, QStringLiteral("latency"), number(v.latency_ms), QStringLiteral("ms"));
    add(variant, item, QStringLiteral("cost per request"), number(v.cost_per_request),
        snapshot_.cost_unit);
    add(variant, item, QStringLiteral("perplexity"), number(v.perplexity), QString());
    add(variant, item, QStringLiteral("mean KL"), number(v.mean_kl), QStringLiteral("nats"));
    add(variant, item, QStringLiteral("top-1 agreement"), number(v.top1_agreement),
        QStringLiteral("fraction"));
    add(variant, item, QStringLiteral("verdict"),
        model_->index(r, QuantVariantModel::kVerdict).data().toString(), QString());
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
  if (paint_if_too_small(painter, kMinimumSize)) return;
  painter.fillRect(rect(), theme().background);
  // The parts are child widgets: their places, in this panel's coordinates.
  const auto place = [this](const QWidget* part) {
    return QRectF(QRect(part->mapTo(this, QPoint(0, 0)), part->size()));
  };
  mark_element(QStringLiteral("variants"), place(table_));
  mark_element(QStringLiteral("error"), place(histogram_));
}

}  // namespace servescope::widgets
