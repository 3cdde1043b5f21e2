// Tokens as chips in a wrapping row: the prompt's tokens as the user types, and the generated
// tokens shaded by their probability with the top alternatives in a hover tooltip.
//
// A view of a TokenListModel: the arrow keys (and Home, End) move the current chip, Shift
// with them or with a click extends the selection, Ctrl+A selects every chip, and Copy
// (Ctrl+C) puts the selected tokens' text on the clipboard. Screen readers read each chip
// through TokenChipsAccessible.
#pragma once

#include <QItemSelectionModel>
#include <QScrollArea>
#include <QVector>
#include <QWidget>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/window/token_list_model.h"

namespace servescope::gui {

class TokenChips : public QWidget {
  Q_OBJECT

 public:
  enum class Shading { kAlternating, kProbability };

  explicit TokenChips(Shading shading, QWidget* parent = nullptr);

  void set_tokens(QVector<GeneratedToken> tokens);
  void append_tokens(const QVector<GeneratedToken>& tokens);
  void clear_tokens();
  const QVector<GeneratedToken>& tokens() const { return model_->tokens(); }
  TokenListModel* model() const { return model_; }
  QItemSelectionModel* selection_model() const { return selection_; }
  // Chips from this index on are drawn dimmed (e.g. prompt tokens not yet prefilled).
  void set_pending_from(int index);
  void set_placeholder(const QString& text);

  // The tooltip text of chip `index`: token, id, probability and alternatives.
  QString tooltip_for(int index) const { return model_->tooltip_for(index); }
  int chip_at(QPoint pos) const;
  // Where chip `index` is drawn (empty before the chips are laid out).
  QRect chip_rect(int index) const;
  // The current chip's row, -1 for none.
  int current_chip() const { return selection_->currentIndex().row(); }
  // The selected tokens' text, in order: what Copy puts on the clipboard.
  QString selected_text() const;

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
  void keyPressEvent(QKeyEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  // Chip rectangles for a given width; the height they need.
  QVector<QRect> layout_chips(int width, int* height) const;
  QColor chip_colour(int index) const;
  void tokens_changed();
  // The chip the key `key` moves to from `from`; -1 when the key is not a move.
  int chip_after_key(int key, int from) const;
  // The chip in the row above (-1) or below (+1) nearest `from` across; `from` at the edge.
  int chip_in_next_row(int from, int direction) const;
  void move_current(int to, bool extend);
  void current_changed(const QModelIndex& current);

  Shading shading_;
  TokenListModel* model_;
  QItemSelectionModel* selection_;
  QVector<QRect> rects_;
  int pending_from_ = -1;
  int anchor_ = -1;  // where a Shift selection starts
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
