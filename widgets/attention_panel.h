// The attention weights of one layer and head in the last step: a row per query token of the
// step, a column per cached (key) token, each cell the softmax weight the query gave that key.
// Keys after a query's own position are masked out by causality: drawn hatched, never coloured.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/panel_view.h"

class QLabel;
class QSpinBox;

namespace servescope::widgets {

struct AttentionSnapshot {
  int layer = 0;
  int head = 0;
  int layer_count = 0;  // the model's layers and query heads: the selectors' ranges
  int head_count = 0;
  std::vector<QString> key_pieces;    // cached tokens, position 0 .. keys - 1
  std::vector<QString> query_pieces;  // this step's tokens, in order
  // Position of query row 0 among the keys (keys - queries when the step's tokens are the last
  // cached ones, as in prefill and decode). Row i may attend keys 0 .. first_query_position + i.
  int64_t first_query_position = 0;
  std::vector<float> weights;  // [queries x keys], row-major; masked entries are ignored
};

// Whether causality lets query row `query` attend key position `key`.
bool attention_visible(const AttentionSnapshot& snapshot, int64_t query, int64_t key);
// Cells a query may attend: n (n + 1) / 2 for a prefill of n tokens from position 0.
int64_t visible_cell_count(const AttentionSnapshot& snapshot);
// Whether weights has queries x keys entries (anything else is drawn as "no data").
bool attention_shape_valid(const AttentionSnapshot& snapshot);

// A perceptual colour scale (viridis) at t in [0, 1], readable by colour-blind viewers.
QColor viridis(double t);

class AttentionPanel : public PanelView {
  Q_OBJECT

 public:
  explicit AttentionPanel(QWidget* parent = nullptr);

  void set_snapshot(AttentionSnapshot snapshot);
  const AttentionSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override { return {"weights"}; }
  QString csv() const override;
  QSize minimumSizeHint() const override;

  // What the last paint showed, for tests and the app.
  int64_t painted_visible_cells() const { return painted_visible_; }
  int64_t painted_masked_cells() const { return painted_masked_; }
  float colour_scale_max() const;  // the weight drawn in the brightest colour
  // The cell (query row, key column) under a point of the last paint, if any.
  std::optional<std::pair<int, int>> cell_at(QPointF pos) const;
  // "query 'cat' (position 3) -> key 'the' (position 1): weight 0.42", or empty off the grid.
  QString cell_tooltip(QPointF pos) const;
  QSpinBox* layer_selector() const { return layer_box_; }
  QSpinBox* head_selector() const { return head_box_; }

 Q_SIGNALS:
  // The user chose another layer or head; the app answers with a new snapshot.
  void selection_changed(int layer, int head);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  QString query_axis_title() const;
  // Returns the bottom of the key labels.
  double paint_labels(QPainter& painter);
  void paint_colour_legend(QPainter& painter, const QRectF& area);

  AttentionSnapshot snapshot_;
  QSpinBox* layer_box_ = nullptr;
  QSpinBox* head_box_ = nullptr;
  QLabel* layer_count_label_ = nullptr;
  QLabel* head_count_label_ = nullptr;
  // Geometry of the last paint: the grid's top-left corner and cell size.
  QPointF grid_origin_;
  double cell_width_ = 0.0;
  double cell_height_ = 0.0;
  bool query_title_level_ = false;  // the grid is lower than the query axis' title
  int64_t painted_visible_ = 0;
  int64_t painted_masked_ = 0;
};

}  // namespace servescope::widgets
