// The three painted parts of the quantisation panel: the error histogram of one tensor, the
// per-layer SQNR bars (weights and KV cache), and a prompt continued by the baseline and a
// quantised variant as token chips. Each paints a part of the panel's snapshot, which it reads
// through a reference (the panel owns both).
#pragma once

#include <QRectF>
#include <QSize>

class QPainter;
#include <QWidget>
#include <utility>
#include <vector>

#include "widgets/hover_layer.h"
#include "widgets/quantisation_snapshot.h"

namespace servescope::widgets {

// "-0.1", "-0.03", "0.01", "3e-3", "1e-5": a histogram edge, short.
QString format_error_edge(double edge);

// A painted part of a panel, with tooltip areas registered while it paints (the hover layer of
// PanelView, for a part that is not a panel of its own).
class PanelPart : public QWidget {
 public:
  using QWidget::QWidget;

 protected:
  bool event(QEvent* event) override;
  // Starts a paint: antialiasing, the widget's font, the theme background, no tooltips yet.
  // Returns the area to paint in (inside a small margin).
  QRectF begin_paint(QPainter& painter);
  void add_tip(const QRectF& area, const QString& text) { hover_.add(area, text); }

 private:
  HoverLayer hover_;  // the panels' hit-test layer, so the parts' tooltips behave as theirs
};

class ErrorHistogramView : public PanelPart {
 public:
  ErrorHistogramView(const QuantisationSnapshot& snapshot, QWidget* parent);
  // The line of statistics printed above the bars, e.g. "RMSE 0.0123 · max |e| 0.05 · ...".
  QString statistics_text() const;
  // Edge labels painted under the bars in the last paint.
  const QStringList& painted_edge_labels() const { return painted_edges_; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const QuantisationSnapshot& snapshot_;
  QStringList painted_edges_;
};

class SqnrBarsView : public PanelPart {
 public:
  SqnrBarsView(const QuantisationSnapshot& snapshot, QWidget* parent);
  // Layers in the order the bars are drawn: every layer of either list, first seen first.
  QStringList layers() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const QuantisationSnapshot& snapshot_;
};

class ContinuationView : public PanelPart {
 public:
  ContinuationView(const QuantisationSnapshot& snapshot, QWidget* parent);
  int64_t chip_count() const { return chips_; }
  // A heading, the prompt line and both continuations on one row of chips each.
  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;
  // The chip painted as the first divergence (one per continuation), for tests.
  int marked_chip_count() const { return marked_; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  // Paints one continuation's chips from `top`, wrapping; returns the bottom.
  double paint_row(QPainter& painter, const TokenContinuation& row, double top, int64_t divergent);

  const QuantisationSnapshot& snapshot_;
  int64_t chips_ = 0;
  int marked_ = 0;
};

}  // namespace servescope::widgets
