#include "app/gui/lesson_ui/pinned_figures.h"

#include <QAction>
#include <QEvent>
#include <QFontMetrics>
#include <QKeySequence>
#include <QLabel>
#include <QStatusBar>
#include <QTimer>

#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/measure_reader.h"
#include "app/gui/window/window_text.h"
#include "widgets/chart_painting.h"

namespace servescope::gui {
namespace {

// The figures a class compares between two runs, in the strip's order.
struct Headline {
  const char* measure;
  const char* label;
};
constexpr Headline kHeadlines[] = {
    {"ttft_ms", QT_TRANSLATE_NOOP("PinnedFigures", "your TTFT")},
    {"tpot_ms", QT_TRANSLATE_NOOP("PinnedFigures", "your TPOT")},
    {"class_tokens_per_s", QT_TRANSLATE_NOOP("PinnedFigures", "class tokens/s")},
    {"kv_bytes", QT_TRANSLATE_NOOP("PinnedFigures", "your KV")},
    {"weight_bytes", QT_TRANSLATE_NOOP("PinnedFigures", "weights")},
    {"variant_mean_kl", QT_TRANSLATE_NOOP("PinnedFigures", "mean KL")},
};

QString value_text(double value, const QString& unit) {
  if (unit == QLatin1String("bytes")) return format_bytes(static_cast<uint64_t>(value));
  return widgets::chart::format_number(value) + QLatin1Char(' ') + unit;
}

// " (0.83x)": `value` as a multiple of the pinned one.
QString ratio_text(double value, double pinned) {
  return QStringLiteral(" (%1x)").arg(QString::number(value / pinned, 'g', 3));
}

QString setup_text(const MainWindow& window) {
  const std::optional<EngineInfo>& info = window.engine_info();
  if (!info) return {};
  const QString weights =
      info->weight_type.isEmpty() ? QStringLiteral("weights as loaded")
                                  : info->weight_type.toUpper() + QStringLiteral(" weights");
  return QStringLiteral("%1, KV %2, %3, %4 classmates, %5")
      .arg(weights, kv_type_label(info->kv_type), batching_text(window.engine_batching()))
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
    run.figures.push_back({h.measure, PinnedFigures::tr(h.label), measured.value, measured.unit});
  }
  return run;
}

QString change_text(const HeadlineFigure& pinned, const HeadlineFigure& now) {
  if (!pinned.value && !now.value) return {};
  const auto value = [](const HeadlineFigure& f) {
    return f.value ? value_text(*f.value, f.unit) : QStringLiteral("–");
  };
  // "TTFT 48.2 → 61.5 ms": a unit said once where both are plain numbers of it (bytes are
  // written each in its own binary prefix).
  const bool one_unit = pinned.value && now.value && pinned.unit != QLatin1String("bytes");
  const QString before =
      one_unit ? widgets::chart::format_number(*pinned.value) : value(pinned);
  QString text = pinned.label + QLatin1Char(' ') + before + QStringLiteral(" → ") + value(now);
  if (pinned.value && now.value && *pinned.value > 0.0) text += ratio_text(*now.value, *pinned.value);
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
  return differing.join(", ");
}

// "0 classmates → 16 classmates: ", what changed from the pinned run to this one, or "Pinned →
// now: " when nothing did.
QString runs_compared(const RunFigures& pinned, const RunFigures& now) {
  const QString from = differing_setup(pinned.setup, now.setup);
  const QString to = differing_setup(now.setup, pinned.setup);
  if (from.isEmpty() && to.isEmpty()) return PinnedFigures::tr("Pinned → now: ");
  // One setting that changed is said once: "0 → 16 classmates", "F32 → Q4_0 weights" (at
  // lecture size the words said twice left no room for a figure).
  const QStringList from_words = from.split(QLatin1Char(' '));
  const QStringList to_words = to.split(QLatin1Char(' '));
  if (!from.contains(QLatin1Char(',')) && !to.contains(QLatin1Char(',')) &&
      from_words.size() == 2 && to_words.size() == 2 && from_words[1] == to_words[1]) {
    return QStringLiteral("%1 → %2 %3: ").arg(from_words[0], to_words[0], to_words[1]);
  }
  return QStringLiteral("%1 → %2: ")
      .arg(from.isEmpty() ? PinnedFigures::tr("pinned") : from,
           to.isEmpty() ? PinnedFigures::tr("now") : to);
}

// Each headline figure either run measured, in the headline order.
QStringList changes(const RunFigures& pinned, const RunFigures& now) {
  QStringList texts;
  for (size_t i = 0; i < pinned.figures.size() && i < now.figures.size(); ++i) {
    if (QString text = change_text(pinned.figures[i], now.figures[i]); !text.isEmpty()) {
      texts << text;
    }
  }
  return texts;
}

}  // namespace

QString comparison_line(const RunFigures& pinned, const RunFigures& now,
                        const QFontMetrics& metrics, int width) {
  const QString separator = QStringLiteral(" · ");
  const QString more = separator + QStringLiteral("…");
  QString line = runs_compared(pinned, now);
  const QStringList figures = changes(pinned, now);
  int shown = 0;
  for (const QString& figure : figures) {
    const QString longer = line + (shown > 0 ? separator : QString()) + figure;
    // The last figure needs no room for "…" after it.
    const bool last = shown + 1 == figures.size();
    if (metrics.horizontalAdvance(longer + (last ? QString() : more)) > width) break;
    line = longer;
    ++shown;
  }
  if (shown < figures.size()) line += shown > 0 ? more : QStringLiteral("…");
  // A setup change too long for the width on its own is cut short too (only then: elidedText
  // measures a little differently and cut a line that fitted by the advance).
  if (metrics.horizontalAdvance(line) <= width) return line;
  return metrics.elidedText(line, Qt::ElideRight, width);
}

QString comparison_tooltip(const RunFigures& pinned, const RunFigures& now) {
  return PinnedFigures::tr("Pinned: %1\nNow: %2\n%3")
      .arg(pinned.setup, now.setup, changes(pinned, now).join('\n'));
}

PinnedFigures::PinnedFigures(MainWindow& window)
    : QObject(&window),
      window_(window),
      strip_(new QLabel),
      pin_action_(new QAction(tr("&Pin this run's figures"), this)),
      unpin_action_(new QAction(tr("&Unpin"), this)),
      refresh_timer_(new QTimer(this)) {
  strip_->setObjectName("pinned-figures");
  strip_->setTextFormat(Qt::PlainText);
  strip_->setContentsMargins(8, 4, 8, 4);
  // One line whatever the text: it is fitted to the width the strip is given, never the reverse.
  strip_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  strip_->installEventFilter(this);
  strip_->hide();
  pin_action_->setShortcut(QKeySequence("Ctrl+K"));
  pin_action_->setToolTip(
      tr("Keep the last run's TTFT, TPOT, tokens/s, KV and weight bytes (and KL) on screen above "
         "every panel; the next runs' figures appear beside them with the ratio"));
  unpin_action_->setShortcut(QKeySequence("Ctrl+Shift+K"));
  unpin_action_->setToolTip(tr("Remove the pinned figures"));
  unpin_action_->setEnabled(false);
  connect(pin_action_, &QAction::triggered, this, [this] {
    if (!pin()) window_.statusBar()->showMessage(tr("Nothing to pin yet: generate first."), 5000);
  });
  connect(unpin_action_, &QAction::triggered, this, &PinnedFigures::unpin);
  // The figures are those of the last finished run: so is the setup they are labelled with
  // (the toolbar may already say what the next run will use).
  connect(&window_, &MainWindow::generation_finished, this,
          [this] { run_setup_ = setup_text(window_); });
  refresh_timer_->setInterval(500);  // the next run's figures as they are measured
  connect(refresh_timer_, &QTimer::timeout, this, &PinnedFigures::refresh);
}

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

bool PinnedFigures::eventFilter(QObject* watched, QEvent* event) {
  // Wider or narrower (lecture mode, the splitter) or in lecture type: as many figures as fit.
  if (watched == strip_ &&
      (event->type() == QEvent::Resize || event->type() == QEvent::FontChange)) {
    refresh();
  }
  return QObject::eventFilter(watched, event);
}

void PinnedFigures::refresh() {
  if (!pinned_) return;
  const RunFigures now = current();
  strip_->setText(comparison_line(*pinned_, now, strip_->fontMetrics(),
                                  strip_->contentsRect().width()));
  strip_->setToolTip(comparison_tooltip(*pinned_, now));
  Q_EMIT refreshed();
}

}  // namespace servescope::gui
