// Pinned comparisons, for a class's "what if 4-bit weights? static batching?": the headline
// figures of a run are pinned, and the figures of each run after it appear beside them with
// the ratio, in a one-line strip above every panel, until unpinned. The figures are the lessons' own
// measures (measure_reader.h), so a pinned TTFT is the TTFT a lesson step reads.
#pragma once

#include <QObject>
#include <QString>
#include <optional>
#include <string>
#include <vector>

class QAction;
class QFontMetrics;
class QLabel;
class QTimer;
class QWidget;

namespace servescope::gui {

class MainWindow;
struct MeasureInputs;

struct HeadlineFigure {
  std::string measure;  // the lesson measure it is ("ttft_ms")
  QString label;        // "TTFT"
  std::optional<double> value;
  QString unit;  // the measure's unit ("ms", "bytes", "tokens/s", "nats")
};

// One run's figures and what it ran on: "Q4_0 weights, KV F16, continuous batching, 15
// classmates, CPU".
struct RunFigures {
  QString setup;
  std::vector<HeadlineFigure> figures;
  bool measured() const;  // a request of the run got its first token (TTFT has a value)
};

// The headline figures read from `inputs` (TTFT, TPOT, the class's tokens/s, the request's KV
// bytes, the weights' bytes, the mean KL against the baseline when the lab measured it).
RunFigures run_figures(const MeasureInputs& inputs, const QString& setup);

// One figure of both runs: "TTFT 10 → 5 ms (0.5x)", "–" for a run that did not measure it
// (then no ratio); empty when neither did.
QString change_text(const HeadlineFigure& pinned, const HeadlineFigure& now);

// The strip's one line, at most `width` pixels in `metrics`: what changed between the runs,
// the parts of each setup the other does not share ("0 classmates → 3 classmates: "), then
// as many figures as fit, in the headline order (TTFT first), and "…" when some did not: at
// lecture size a second line took the panel's room (the tooltip, comparison_tooltip, has them
// all).
QString comparison_line(const RunFigures& pinned, const RunFigures& now,
                        const QFontMetrics& metrics, int width);
// Both setups whole and every figure, one a line.
QString comparison_tooltip(const RunFigures& pinned, const RunFigures& now);

class PinnedFigures : public QObject {
  Q_OBJECT

 public:
  explicit PinnedFigures(MainWindow& window);

  QLabel* strip() const { return strip_; }  // hidden while nothing is pinned
  QAction* pin_action() const { return pin_action_; }
  QAction* unpin_action() const { return unpin_action_; }

  // Pins the last run's figures (false, and nothing pinned, when it has none yet).
  bool pin();
  void unpin();
  const std::optional<RunFigures>& pinned() const { return pinned_; }
  // The current run's figures as the strip shows them next to the pinned ones.
  RunFigures current() const;

 Q_SIGNALS:
  // The strip shows the figures measured by now (twice a second while pinned, and on resize).
  void refreshed();

 private:
  bool eventFilter(QObject* watched, QEvent* event) override;  // the strip's resizes
  void refresh();

  MainWindow& window_;
  QLabel* strip_;
  QAction* pin_action_;
  QAction* unpin_action_;
  QTimer* refresh_timer_;
  std::optional<RunFigures> pinned_;
  QString run_setup_;  // what the last finished run ran on (empty before one)
};

}  // namespace servescope::gui
