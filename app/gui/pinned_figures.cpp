#include "app/gui/pinned_figures.h"

#include <QAction>
#include <QKeySequence>
#include <QLabel>
#include <QStatusBar>
#include <QTimer>

#include "app/gui/main_window.h"
#include "app/gui/measure_reader.h"
#include "app/gui/window_text.h"
#include "widgets/chart_painting.h"

namespace servescope::gui {
namespace {

// The figures a class compares between two runs, in the strip's order.
struct Headline {
  const char* measure;
  const char* label;
};
constexpr Headline kHeadlines[] = {
    {"ttft_ms", "TTFT"},
    {"tpot_ms", "TPOT"},
    {"class_tokens_per_s", "class total"},
    {"kv_bytes", "KV"},
    {"weight_bytes", "weights"},
    {"variant_mean_kl", "mean KL"},
};

QString value_text(double value, const QString& unit) {
  if (unit == QLatin1String("bytes")) return bytes_text(static_cast<uint64_t>(value));
  return widgets::chart::format_number(value) + QLatin1Char(' ') + unit;
}

QString setup_text(const MainWindow& window) {
  const std::optional<EngineInfo>& info = window.engine_info();
  if (!info) return {};
  const QString weights =
      info->weight_type.isEmpty() ? QStringLiteral("weights as loaded")
                                  : info->weight_type.toUpper() + QStringLiteral(" weights");
  return QStringLiteral("%1, KV %2, %3, %4 classmates, %5")
      .arg(weights, kv_type_label(info->kv_type), batching_text(info->batching))
      .arg(window.classmates())
      .arg(device_label(*info));
}

}  // namespace

bool RunFigures::measured() const {
  // The weights' bytes are known before any run: a run is a request that got its first token.
  for (const HeadlineFigure& f : figures) {
    if (f.measure == "ttft_ms") return f.value.has_value();
  }
  return false;
}

RunFigures run_figures(const MeasureInputs& inputs, const QString& setup) {
  RunFigures run;
  run.setup = setup;
  for (const Headline& h : kHeadlines) {
    const MeasureValue measured = read_measure(inputs, h.measure);
    run.figures.push_back({h.measure, QString::fromLatin1(h.label), measured.value, measured.unit});
  }
  return run;
}

QString figure_text(const HeadlineFigure& figure, std::optional<double> pinned) {
  if (!figure.value) return {};
  QString text = figure.label + QLatin1Char(' ') + value_text(*figure.value, figure.unit);
  if (pinned && *pinned > 0.0) {
    text += QStringLiteral(" (%1x)").arg(QString::number(*figure.value / *pinned, 'g', 3));
  }
  return text;
}

namespace {

// The parts of `setup` ("Q4_0 weights, KV F16, ...") the other run's setup does not share: the
// strip names only what changed between the runs, so it stays short at lecture size.
QString differing_setup(const QString& setup, const QString& other) {
  const QStringList mine = setup.split(QStringLiteral(", "));
  const QStringList theirs = other.split(QStringLiteral(", "));
  QStringList differing;
  for (const QString& part : mine) {
    if (!theirs.contains(part)) differing << part;
  }
  return differing.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(differing.join(", "));
}

}  // namespace

QString comparison_html(const RunFigures& pinned, const RunFigures& now) {
  QStringList then_parts, now_parts;
  for (size_t i = 0; i < pinned.figures.size(); ++i) {
    const HeadlineFigure& p = pinned.figures[i];
    if (p.value) then_parts << figure_text(p).toHtmlEscaped();
    if (i < now.figures.size() && now.figures[i].value) {
      now_parts << figure_text(now.figures[i], p.value).toHtmlEscaped();
    }
  }
  const QString separator = QStringLiteral(" &nbsp;·&nbsp; ");
  return QStringLiteral("<b>Pinned</b>%1: %2<br><b>Now</b>%3: %4")
      .arg(differing_setup(pinned.setup, now.setup).toHtmlEscaped(), then_parts.join(separator),
           differing_setup(now.setup, pinned.setup).toHtmlEscaped(),
           now_parts.isEmpty() ? QStringLiteral("no run yet") : now_parts.join(separator));
}

PinnedFigures::PinnedFigures(MainWindow& window)
    : QObject(&window),
      window_(window),
      strip_(new QLabel),
      pin_action_(new QAction("Pin this run's figures", this)),
      unpin_action_(new QAction("Unpin", this)),
      refresh_timer_(new QTimer(this)) {
  strip_->setObjectName("pinned-figures");
  strip_->setWordWrap(true);
  strip_->setTextFormat(Qt::RichText);
  strip_->setContentsMargins(8, 4, 8, 4);
  strip_->hide();
  pin_action_->setShortcut(QKeySequence("Ctrl+K"));
  pin_action_->setToolTip(
      "Keep the last run's TTFT, TPOT, tokens/s, KV and weight bytes (and KL) on screen above "
      "every panel; the next runs' figures appear beside them with the ratio");
  unpin_action_->setShortcut(QKeySequence("Ctrl+Shift+K"));
  unpin_action_->setToolTip("Remove the pinned figures");
  unpin_action_->setEnabled(false);
  connect(pin_action_, &QAction::triggered, this, [this] {
    if (!pin()) window_.statusBar()->showMessage("Nothing to pin yet: generate first.", 5000);
  });
  connect(unpin_action_, &QAction::triggered, this, &PinnedFigures::unpin);
  // The figures are those of the last finished run: so is the setup they are labelled with
  // (the toolbar may already say what the next run will use).
  connect(&window_, &MainWindow::generation_finished, this,
          [this] { run_setup_ = setup_text(window_); });
  refresh_timer_->setInterval(500);  // the next run's figures as they are measured
  connect(refresh_timer_, &QTimer::timeout, this, &PinnedFigures::refresh);
}

QWidget* PinnedFigures::strip() const { return strip_; }

RunFigures PinnedFigures::current() const {
  const std::optional<EngineInfo>& info = window_.engine_info();
  // The KL of the weights in use against the file's own (the quantisation lab's row).
  std::string variant = info && !info->weight_type.isEmpty() ? info->weight_type.toStdString()
                                                              : std::string("none");
  static const std::vector<SizeSweepPoint> kNoSizes;
  return run_figures(measure_inputs(window_, kNoSizes, nullptr, std::move(variant)),
                     run_setup_.isEmpty() ? setup_text(window_) : run_setup_);
}

bool PinnedFigures::pin() {
  RunFigures figures = current();
  if (!figures.measured()) return false;
  pinned_ = std::move(figures);
  unpin_action_->setEnabled(true);
  strip_->show();
  refresh();
  refresh_timer_->start();
  return true;
}

void PinnedFigures::unpin() {
  pinned_.reset();
  unpin_action_->setEnabled(false);
  refresh_timer_->stop();
  strip_->hide();
}

void PinnedFigures::refresh() {
  if (!pinned_) return;
  const RunFigures now = current();
  strip_->setText(comparison_html(*pinned_, now));
  // The whole of each setup, where the strip names only what differs.
  strip_->setToolTip(QStringLiteral("Pinned: %1\nNow: %2").arg(pinned_->setup, now.setup));
}

}  // namespace servescope::gui
