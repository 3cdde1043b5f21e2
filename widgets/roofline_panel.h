// The roofline: every engine step as a point at (arithmetic intensity, achieved GFLOP/s) under
// the device's measured roofs, on log-log axes. Decode of a few requests sits on the bandwidth
// slope; prefill and large batches walk right, toward the compute roof.
#pragma once

#include <QLineF>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "widgets/panel_view.h"
#include "widgets/phases_panel.h"

class QPainter;

namespace servescope::widgets {

class LabelPlacer;
struct LegendSection;
struct RooflineLegend;

// StepPhase (prefill, decode, mixed: chunked prefill beside decodes) is the phases panel's.

// The bandwidth roof a point is judged against: the cache's when the step's working set (its
// weights and KV) fits the last-level cache, else main memory's.
enum class PointRoof { kCache, kMemory };

struct RooflinePoint {
  int64_t step_index = 0;
  StepPhase phase = StepPhase::kDecode;
  int64_t batch_size = 1;                // sequences in the step
  double intensity_flop_per_byte = 0.0;  // FLOPs / bytes moved
  double gflop_per_s = 0.0;              // FLOPs / wall time
  PointRoof roof = PointRoof::kMemory;
};

// Roofs measured by the device probe, raised where a measured step beat them; 0 means "not
// measured" (that roof is not drawn), and so does anything that is not a positive finite number.
struct RooflineSnapshot {
  QString device_name;
  double cache_gb_per_s = 0.0;
  double memory_gb_per_s = 0.0;
  double compute_gflop_per_s = 0.0;
  // A measured step beat the probe's figure: the roof is what that step achieved.
  bool cache_raised = false;
  bool memory_raised = false;
  bool compute_raised = false;
  // Which step raised each ("a step of stories.gguf on 2026-12-06"); empty: not said.
  QString cache_raised_by;
  QString memory_raised_by;
  QString compute_raised_by;
  std::vector<RooflinePoint> points;  // in step order; the last one is "latest"
};

// Attainable performance under one bandwidth roof: min(bandwidth x intensity, compute).
double attainable_gflop_per_s(double intensity, double bandwidth_gb_per_s,
                              double compute_gflop_per_s);
// Where a bandwidth slope meets the compute roof: compute / bandwidth, in FLOP/byte.
double ridge_intensity(double bandwidth_gb_per_s, double compute_gflop_per_s);

// Whole decades [low, high] (powers of ten) that hold every value > 0; at least one decade.
struct DecadeRange {
  int low = 0;
  int high = 1;
};
DecadeRange decade_range(const std::vector<double>& positive_values);
// "0.01", "0.1", "1", "10", "100", "1k", "10k", ... for 10^exponent.
QString decade_label(int exponent);

class RooflinePanel : public PanelView {
  Q_OBJECT

 public:
  explicit RooflinePanel(QWidget* parent = nullptr);

  void set_snapshot(RooflineSnapshot snapshot);
  const RooflineSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override {
    return {"memory-roof", "cache-roof", "compute-roof", "ridge", "points"};
  }
  QString csv() const override;
  QSize minimumSizeHint() const override;

  // What the plot shows, for tests and the app.
  DecadeRange x_decades() const { return x_decades_; }
  DecadeRange y_decades() const { return y_decades_; }
  QStringList roof_labels() const;           // one per measured roof, with its value
  std::vector<double> ridge_points() const;  // one per measured bandwidth when compute is known
  QStringList legend_entries() const;        // batch sizes, then the phase shapes
  // The legend's parts the last paint left out for room ("judged against"), named in the
  // legend's last line; the least needed go first.
  QStringList hidden_legend_sections() const { return hidden_legend_sections_; }
  bool has_roofs() const;
  // What is missing, written over the plot: "device not probed yet", "no data yet: ...".
  QStringList notes() const;
  // The step under `pos` in the last paint, described; empty when there is none.
  QString point_tooltip(QPointF pos) const;
  // What the roof a point is judged against allows at its intensity; 0 when that roof is not
  // measured.
  double roof_gflop_per_s(const RooflinePoint& point) const;
  // The points drawn above the roof they are judged against (none, when the roofs were raised
  // by the measured steps as they should be).
  std::vector<RooflinePoint> points_above_roofs() const;
  // "main memory roof raised by a step of this run", naming every raised roof and which step
  // raised it ("a measured step" where not said); empty when none.
  QString raised_note() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Bandwidth {
    QString name;
    double gb_per_s;
    bool cache;  // else main memory
    bool raised;
  };
  std::vector<Bandwidth> bandwidths() const;
  // A bandwidth roof as drawn: the whole slope, and its part above the plot's floor.
  struct RoofLine {
    Bandwidth band;
    QLineF line;
    QLineF visible;
  };
  std::vector<RoofLine> roof_lines(const QRectF& plot) const;
  std::vector<int64_t> batch_sizes() const;  // distinct, ascending
  void update_ranges();
  std::vector<LegendSection> legend_sections() const;
  void paint_axes(QPainter& painter, const QRectF& plot, const QString& y_title);
  // The roofs' lines, then their figures where they meet nothing else drawn.
  void paint_roofs(QPainter& painter, const QRectF& plot, LabelPlacer& placer);
  void paint_roof_labels(QPainter& painter, const QRectF& plot, LabelPlacer& placer);
  void paint_points(QPainter& painter, const QRectF& plot, LabelPlacer& placer);
  void paint_legend(QPainter& painter, const RooflineLegend& legend, QPointF top_left);
  QStringList judged_entries() const;  // the roofs points are judged against, with counts

  RooflineSnapshot snapshot_;
  DecadeRange x_decades_;
  DecadeRange y_decades_;
  QRectF plot_area_;  // of the last paint, for tooltips found on hover
  QStringList hidden_legend_sections_;
};

}  // namespace servescope::widgets
