// Batching panel: which request holds each batch slot in each step (prefill, decode or
// recompute after preemption), batch occupancy over time, per-request TTFT and TPOT, and the
// throughput a batch-size sweep measured next to its latency cost.
#pragma once

#include <QStringList>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/metric_help.h"
#include "widgets/panel_view.h"
#include "widgets/request_colours.h"

namespace servescope::widgets {

enum class SlotState { kEmpty, kPrefill, kDecode, kRecompute };
QString slot_state_name(SlotState state);

struct SlotCell {
  int64_t request = -1;  // -1 when the slot is empty
  SlotState state = SlotState::kEmpty;
};

struct BatchStep {
  int64_t index = 0;            // engine step index, increasing
  std::vector<SlotCell> cells;  // one per slot (slot_count); missing cells count as empty
};

// Latencies as the engine's telemetry defines them (TTFT includes queueing and prefill; TPOT is
// the mean time per output token after the first); 0 = not defined yet.
struct RequestLatency {
  int64_t request = 0;
  double ttft_ms = 0.0;
  double tpot_ms = 0.0;
  int64_t output_tokens = 0;
  bool finished = false;
  // TPOT = tpot_step_ms + tpot_gap_ms: the mean step time of the tpot_steps decode steps that
  // made its later tokens, and the time between steps per token. tpot_steps 0: not known
  // (its steps left the panel's history).
  int64_t tpot_steps = 0;
  double tpot_step_ms = 0.0;
  double tpot_gap_ms = 0.0;
};

// "TPOT 6.73 ms = 2.50 ms mean step time (31 steps) + 4.23 ms between steps", or the TPOT
// alone when its steps are not known.
QString tpot_explanation(const RequestLatency& request);

// One point of the sweep, an engine of max_batch slots (the name BatchSweepPoint, the CLI's
// bench and the trace give it): its decode steps' throughput and mean step time, both from the
// same steps (tokens_per_s = tokens_per_step / step_latency_ms, in tokens per ms x 1000).
struct SweepPoint {
  int64_t max_batch = 0;
  double tokens_per_s = 0.0;     // decode tokens / decode step time
  double step_latency_ms = 0.0;  // mean decode step time at this batch size
  double tokens_per_step = 0.0;  // decode tokens per decode step (at most max_batch)
  // The mean step time's range over the sweep's repeats (0 when not repeated).
  double fastest_step_ms = 0.0;
  double slowest_step_ms = 0.0;
};

// "batch 8: 2560 tokens/s = 6.4 tokens per step / 2.5 ms per step (median run; all runs
// 2.4-2.7 ms per step)"
QString sweep_point_text(const SweepPoint& point);

// What the sweep chart shows, with its own ratios, so they are not mistaken for a figure taken
// over several sweeps: "The last sweep, each size's median run (bars: all its runs). Tokens/s
// against batch 1: 2: 1.9x, 4: 3.4x, 8: 3.67x, 16: 4.5x". Empty for no sweep; the ratios are
// left out without a batch-1 point.
QString sweep_summary(const std::vector<SweepPoint>& sweep);

struct BatchingSnapshot {
  int32_t slot_count = 0;
  QString policy;                // "continuous batching", "static batching, wait 200 ms"
  QString collecting;            // "collecting a batch: 3 of 16, runs in 120 ms", or empty
  std::vector<BatchStep> steps;  // oldest first
  std::vector<RequestLatency> requests;
  std::vector<SweepPoint> sweep;  // empty until the user presses Sweep
  QString sweep_workload;         // what each size served ("2 requests per slot, ..."), or empty
  MetricHelp help;                // the figures' definitions, for the tooltips
  OwnRequests own_requests;       // the user's, in their own colour
  QString pacing_note;            // "Slow motion: times are real ...", or empty
};

class BatchingPanel : public PanelView {
  Q_OBJECT

 public:
  explicit BatchingPanel(QWidget* parent = nullptr);

  void set_snapshot(BatchingSnapshot snapshot);
  const BatchingSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override { return {"slots", "latencies", "sweep"}; }
  QString csv() const override;
  QSize minimumSizeHint() const override;  // below it the panel asks for more room

  // What the panel shows, for tests and the app.
  std::vector<double> occupancy() const;  // per step: slots in use / slot_count
  // The steps the occupancy chart draws: the newest that fit at kMinCellWidth per step in the
  // last paint (all of them before the first paint).
  size_t first_shown_step() const { return std::min(first_shown_, snapshot_.steps.size()); }
  // The mean of occupancy() over exactly the steps the chart draws: its heading's figure.
  double mean_occupancy() const;
  // "Occupancy: mean 6.25% over 40 steps", or "... over the last 40 steps (of 90)" when the
  // chart's width holds only the latest of the steps held.
  QString occupancy_heading() const;
  QStringList legend_labels() const;
  QString sweep_note() const;  // the message shown instead of the sweep charts, or empty
  // Where the throughput chart drew each sweep point in the last paint (x on a log2 batch
  // axis), in the sweep's order; empty when it was not drawn.
  const std::vector<QPointF>& sweep_dots() const { return sweep_dots_; }

  // Heatmap geometry of the last paint: the cell of (step index, slot), and the inverse.
  std::optional<QRectF> cell_rect(int64_t step_index, int slot) const;
  struct CellId {
    int64_t step_index;
    int slot;
  };
  std::optional<CellId> cell_at(QPointF pos) const;
  // "Step 13, slot 0: your request 2, decode.", or empty off the heatmap.
  QString cell_tooltip(QPointF pos) const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  // The sections shown in `body_lines` lines of room, per column, and the titles of those
  // left out.
  struct Layout {
    QStringList left, right, hidden;
  };
  Layout layout_for(double body_lines) const;
  std::vector<chart::LegendEntry> legend(bool compact = false) const;
  void paint_heatmap_and_occupancy(QPainter& painter, const QRectF& area, bool with_occupancy);
  chart::Frame paint_occupancy(QPainter& painter, const QRectF& area, chart::AxesSpec spec);
  void paint_latencies(QPainter& painter, const QRectF& area);
  // Indices into snapshot_.requests of the table's rows, given `lines` lines of room.
  std::vector<size_t> latency_rows(size_t lines) const;
  void paint_sweep(QPainter& painter, const QRectF& area);
  void paint_sweep_alone(QPainter& painter);

  BatchingSnapshot snapshot_;
  // Heatmap layout of the last paint: x is the step index, y the slot (row 0 at the top).
  chart::Frame heatmap_;
  size_t first_shown_ = 0;  // index into snapshot_.steps of the first step drawn
  std::vector<QPointF> sweep_dots_;
};

}  // namespace servescope::widgets
