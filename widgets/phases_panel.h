// Phases panel: the engine's steps on a time line (prefill blocks against decode ticks), each
// step's kernel classes where the backend timed them, tokens/s per phase, and time per decode
// step against context length (attention grows with the context, matmuls stay flat).
#pragma once

#include <QStringList>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/metric_help.h"
#include "widgets/panel_view.h"

namespace servescope::widgets {

// One engine step as measured.
struct StepBar {
  int64_t index = 0;
  double start_ms = 0.0;  // on any monotonic clock; the panel shows times since the first step
  double end_ms = 0.0;
  int64_t prefill_tokens = 0;     // prompt tokens processed in this step (all sequences)
  int64_t decode_tokens = 0;      // tokens generated in this step (one per decoding sequence)
  int64_t sequences = 0;          // sequences in the batch
  int64_t context_tokens = 0;     // longest context any sequence attended over in this step
  bool kernels_measured = false;  // false: the four kernel times below are meaningless
  double matmul_ms = 0.0;
  double attention_ms = 0.0;
  double norm_ms = 0.0;
  double other_ms = 0.0;
};

struct PhasesSnapshot {
  std::vector<StepBar> steps;  // oldest first
  // Throughput of the prefill-only and of the decode-only steps (mixed steps in neither).
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  MetricHelp help;      // the figures' definitions, for the tooltips
  QString pacing_note;  // "Slow motion: times are real ...", or empty
};

enum class StepPhase { kPrefill, kDecode, kMixed, kIdle };
StepPhase phase_of(const StepBar& step);

class PhasesPanel : public PanelView {
  Q_OBJECT

 public:
  explicit PhasesPanel(QWidget* parent = nullptr);

  void set_snapshot(PhasesSnapshot snapshot);
  const PhasesSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override { return {"prefill", "decode", "decode-time"}; }
  QString csv() const override;
  QSize minimumSizeHint() const override;  // below it the panel asks for more room

  // What the panel shows, for tests and the app.
  int step_count(StepPhase phase) const;
  bool kernels_measured() const;  // any step carries kernel times
  QString kernel_note() const;    // the message shown instead of kernel strips, or empty
  QStringList legend_labels() const;
  // The full x range of the time line, from 0 at the first step (zoomed in, the time line shows
  // shown_x_range("timeline") of it).
  chart::Range time_axis_ms() const;
  // (context tokens, step ms) of every pure decode step, in step order.
  std::vector<QPointF> decode_points() const;
  QStringList throughput_labels() const;  // "Prefill: 1234 tokens/s", "Decode: ..."
  // The step drawn under `pos` on the time line in the last paint.
  std::optional<size_t> step_at(QPointF pos) const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<chart::LegendEntry> legend(bool explained) const;
  void paint_timeline(QPainter& painter, const QRectF& area);
  void paint_kernel_strip(QPainter& painter, const chart::Frame& frame, const QRectF& lane);
  void paint_decode_chart(QPainter& painter, const QRectF& area);
  void paint_throughput(QPainter& painter, const QRectF& area);

  PhasesSnapshot snapshot_;
  // Time line layout of the last paint (x in ms since the first step).
  chart::Frame timeline_;
  QRectF timeline_lanes_;
};

}  // namespace servescope::widgets
