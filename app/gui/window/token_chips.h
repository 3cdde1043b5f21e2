// Tokens as chips in a wrapping row: the prompt's tokens as the user types, and the generated
// tokens shaded by their probability with the top alternatives in a hover tooltip.
#pragma once

#include <QScrollArea>
#include <QVector>
#include <QWidget>

#include "app/gui/engine_bridge/engine_types.h"

namespace servescope::gui {

class TokenChips : public QWidget {
  Q_OBJECT

 public:
  enum class Shading { kAlternating, kProbability };

  explicit TokenChips(Shading shading, QWidget* parent = nullptr);

  void set_tokens(QVector<GeneratedToken> tokens);
  void append_tokens(const QVector<GeneratedToken>& tokens);
  void clear_tokens();
  const QVector<GeneratedToken>& tokens() const { return tokens_; }
  // Chips from this index on are drawn dimmed (e.g. prompt tokens not yet prefilled).
  void set_pending_from(int index);
  void set_placeholder(const QString& text);

  // The tooltip text of chip `index`: token, id, probability and alternatives.
  QString tooltip_for(int index) const;
  int chip_at(QPoint pos) const;

  // The height of `lines` rows of chips in `font`, margins included.
  static int height_of_lines(int lines, const QFont& font);

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  // Chip rectangles for a given width; the height they need.
  QVector<QRect> layout_chips(int width, int* height) const;
  static QString display_text(const QString& text);
  QColor chip_colour(int index) const;

  Shading shading_;
  QVector<GeneratedToken> tokens_;
  QVector<QRect> rects_;
  int pending_from_ = -1;
  QString placeholder_;
};

// Chips in a scroll area at most `max_lines` rows of chips tall (at the current font size).
class ChipsScroll : public QScrollArea {
  Q_OBJECT

 public:
  ChipsScroll(TokenChips* chips, int max_lines, QWidget* parent = nullptr);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void cap_height();
  int max_lines_;
};

}  // namespace servescope::gui
