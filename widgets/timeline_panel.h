// Timeline panel: each request's life as a row, time left to right: waiting in the queue, its
// prompt's chunks, decoding, preempted and recomputed, until it left; its arrival and first
// token marked, TTFT and TPOT on hover. Head-of-line blocking under static batching shows as a
// long queued bar.
#pragma once

#include <QStringList>
#include <cstdint>
#include <utility>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/metric_help.h"
#include "widgets/panel_view.h"
#include "widgets/request_colours.h"

namespace servescope::widgets {

enum class LifeStageView { kQueued, kPrefill, kDecode, kPreempted, kRecompute };
// "queued", "prefill", "decode", "preempted", "recompute": the CSV's names.
QString life_stage_key(LifeStageView stage);

// One stretch of a request's life, on the engine clock (ms).
struct LifeBar {
  LifeStageView stage = LifeStageView::kQueued;
  double start_ms = 0.0;
  double end_ms = 0.0;
  int64_t steps = 0;   // engine steps in it (0 for a wait)
  int64_t tokens = 0;  // tokens those steps processed for it
};

struct RequestLifeRow {
  int64_t request = 0;
  double arrival_ms = 0.0;
  double first_token_ms = -1.0;  // -1: no token yet
  double ttft_ms = 0.0;          // 0: no token yet
  double tpot_ms = 0.0;          // 0: fewer than two tokens
  int64_t output_tokens = 0;
  bool finished = false;
  QString finish_reason;  // "max tokens", "stop token", ... once finished
  std::vector<LifeBar> bars;  // in time order, each starting where the last ended
};

struct TimelineSnapshot {
  std::vector<RequestLifeRow> rows;  // oldest first
  double now_ms = 0.0;               // the latest engine time: where running rows end
  QString policy;                    // "continuous batching", "static batching, wait 200 ms"
  MetricHelp help;
  OwnRequests own_requests;
  QString pacing_note;  // "Slow motion: times are real ...", or empty
};

class TimelinePanel : public PanelView {
  Q_OBJECT

 public:
  explicit TimelinePanel(QWidget* parent = nullptr);

  void set_snapshot(TimelineSnapshot snapshot);
  const TimelineSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override { return {"queued", "first-token"}; }
  QString csv() const override;
  QSize minimumSizeHint() const override;

  // The rows drawn in the last paint: indices into snapshot().rows, oldest first (the newest
  // that fit; all of them before the first paint).
  size_t first_shown_row() const { return std::min(first_shown_, snapshot_.rows.size()); }
  // Where the bar `bar` of row `row` was painted last; empty when it was not.
  QRectF bar_rect(size_t row, size_t bar) const;
  // "Waited in the queue: mean 12.5 ms, longest 480 ms (request 7), over 24 requests": the
  // summary line over the rows drawn.
  QString queue_summary() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  // Where the queue summary and the marks' key go, from the top of `area`.
  struct SummaryLayout {
    QRectF text, marks;
  };
  SummaryLayout summary_layout(const QRectF& area) const;
  void paint_summary(QPainter& painter, const SummaryLayout& layout);
  static QString marks_key();
  void paint_rows(QPainter& painter, const QRectF& area);
  // The engine-clock span of the rows drawn: the first arrival to the latest end.
  std::pair<double, double> shown_time_span() const;
  static QString row_label(int64_t request, bool own);  // "12", or "yours 12"
  // The row's label right-aligned in `label`, and its hover over the row to `row_right`.
  void paint_label(QPainter& painter, const RequestLifeRow& row, const QRectF& label,
                   qreal row_right);
  void paint_row(QPainter& painter, const chart::Frame& frame, size_t index, const QRectF& band);
  QString row_text(const RequestLifeRow& row) const;
  QString bar_text(const RequestLifeRow& row, size_t bar) const;
  std::vector<chart::LegendEntry> legend() const;

  TimelineSnapshot snapshot_;
  size_t first_shown_ = 0;
  std::vector<std::vector<QRectF>> bar_rects_;  // per row shown (from first_shown_), per bar
};

}  // namespace servescope::widgets
