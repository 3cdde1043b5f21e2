// The "inside a block" picture of the quantisation panel: how one block of the loaded model's
// weights is stored in a block type. A strip of the block's bytes by field, the scale (and
// min) with their fp16 bits, the formula, and every element: its original value, the value
// the stored integer decodes to, the error between them and the levels the block can
// represent. K-quants show their 256-element super-block cut into sub-blocks, each with its
// own small-integer scale (and min) times the super-block's fp16 d (and dmin).
#pragma once

#include <QString>
#include <QStringList>

#include "widgets/quantisation_charts.h"
#include "widgets/quantisation_snapshot.h"

namespace servescope::widgets {

class QuantBlockView : public PanelPart {
 public:
  QuantBlockView(const QuantisationSnapshot& snapshot, QWidget* parent);

  // Shows the snapshot's block of this type (the first block when there is none of it).
  void set_type(const QString& type);
  // The block shown, or nullptr when the snapshot has none.
  const QuantBlockSnapshot* block() const;

  // How the view writes a stored number (scales, mins, values): 5 significant digits.
  static QString format_value(double value);
  // "d = 0.0012341 (fp16 0x1a0f)": the line naming a stored fp16 number.
  static QString fp16_text(const QString& name, double value, uint16_t bits);
  // Every text painted in the last paint, in order, for tests.
  const QStringList& painted_texts() const { return painted_; }

  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  // The parts, top to bottom; each returns the height it took.
  double paint_bytes(QPainter& painter, const QRectF& area, const QuantBlockSnapshot& b);
  double paint_scales(QPainter& painter, const QRectF& area, const QuantBlockSnapshot& b);
  void paint_values(QPainter& painter, const QRectF& area, const QuantBlockSnapshot& b);
  // Draws `text` in `rect` and records it in painted_texts().
  void text(QPainter& painter, const QRectF& rect, int flags, const QString& text);

  const QuantisationSnapshot& snapshot_;
  QString type_;
  QStringList painted_;
};

}  // namespace servescope::widgets
