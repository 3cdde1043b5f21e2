#include "app/gui/window/token_chips.h"

#include <QAccessible>
#include <QApplication>
#include <QClipboard>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QPainter>
#include <QToolTip>

#include "app/gui/window/token_chips_accessible.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

constexpr int kPadX = 4;
constexpr int kGap = 3;
constexpr int kMargin = 4;

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

}  // namespace

TokenChips::TokenChips(Shading shading, QWidget* parent)
    : QWidget(parent),
      shading_(shading),
      model_(new TokenListModel(this)),
      selection_(new QItemSelectionModel(model_, this)) {
  install_token_chips_accessible();
  // Height for width in the policy too: a resizable scroll area asks the policy, not the
  // virtual, before it gives the chips the height their rows need.
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);  // the arrows walk the chips, Ctrl+C copies them
  setAccessibleName(shading == Shading::kAlternating ? tr("Prompt tokens")
                                                     : tr("Generated tokens"));
  connect(selection_, &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) { current_changed(current); });
  connect(selection_, &QItemSelectionModel::selectionChanged, this, qOverload<>(&QWidget::update));
}

void TokenChips::set_tokens(QVector<GeneratedToken> tokens) {
  model_->set_tokens(std::move(tokens));  // the selection and current chip go with the old
  pending_from_ = -1;
  anchor_ = -1;
  tokens_changed();
}

void TokenChips::append_tokens(const QVector<GeneratedToken>& tokens) {
  model_->append_tokens(tokens);
  tokens_changed();
}

void TokenChips::clear_tokens() { set_tokens({}); }

void TokenChips::tokens_changed() {
  int height = 0;
  rects_ = layout_chips(width(), &height);
  updateGeometry();
  update();
}

void TokenChips::set_pending_from(int index) {
  pending_from_ = index;
  update();
}

void TokenChips::set_placeholder(const QString& text) {
  placeholder_ = text;
  update();
}

QVector<QRect> TokenChips::layout_chips(int width, int* height) const {
  const QFontMetrics metrics(font());
  const int chip_height = metrics.height() + 4;
  QVector<QRect> rects;
  int x = kMargin;
  int y = kMargin;
  for (const GeneratedToken& token : tokens()) {
    const int w = metrics.horizontalAdvance(TokenListModel::display_text(token.text)) + 2 * kPadX;
    if (x > kMargin && x + w > width - kMargin) {
      x = kMargin;
      y += chip_height + kGap;
    }
    rects.push_back(QRect(x, y, w, chip_height));
    x += w + kGap;
  }
  *height = y + chip_height + kMargin;
  return rects;
}

int TokenChips::heightForWidth(int width) const {
  int height = 0;
  layout_chips(width, &height);
  return height;
}

int TokenChips::height_of_lines(int lines, const QFont& font) {
  const int chip_height = QFontMetrics(font).height() + 4;
  return 2 * kMargin + lines * chip_height + (lines - 1) * kGap;
}

QSize TokenChips::sizeHint() const { return {300, heightForWidth(300)}; }

QSize TokenChips::minimumSizeHint() const {
  return {100, QFontMetrics(font()).height() + 4 + 2 * kMargin};
}

void TokenChips::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  int height = 0;
  rects_ = layout_chips(width(), &height);
  updateGeometry();
}

QColor TokenChips::chip_colour(int index) const {
  const widgets::Theme& theme = widgets::theme();
  const GeneratedToken& token = tokens()[index];
  if (shading_ == Shading::kProbability && token.probability >= 0.0) {
    // Confident tokens are strongly coloured, unlikely ones pale.
    return mix(theme.surface, theme.decode, 0.15 + 0.75 * token.probability);
  }
  return mix(theme.surface, theme.series(1 + index % 2 * 2), 0.35);
}

void TokenChips::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const widgets::Theme& theme = widgets::theme();
  painter.fillRect(rect(), theme.background);
  if (tokens().isEmpty()) {
    painter.setPen(theme.muted_text);
    painter.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, placeholder_);
    return;
  }
  int height = 0;
  rects_ = layout_chips(width(), &height);
  const int current = current_chip();
  for (int i = 0; i < tokens().size(); ++i) {
    const bool pending = pending_from_ >= 0 && i >= pending_from_;
    const bool selected = selection_->isRowSelected(i);
    QColor fill = chip_colour(i);
    if (pending) fill = mix(theme.background, fill, 0.4);
    // Selected chips have a strong outline, so the chips keep their shading.
    painter.setPen(QPen(selected  ? theme.text
                        : pending ? theme.grid
                                  : mix(fill, theme.text, 0.25),
                        selected ? 2.0 : 1.0, pending && !selected ? Qt::DashLine : Qt::SolidLine));
    painter.setBrush(fill);
    painter.drawRoundedRect(QRectF(rects_[i]).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
    // Dark text on light chips and light text on dark ones.
    painter.setPen(fill.lightnessF() > 0.55 ? QColor(20, 20, 20) : QColor(240, 240, 240));
    painter.drawText(rects_[i], Qt::AlignCenter, TokenListModel::display_text(tokens()[i].text));
    if (i == current && hasFocus()) {
      painter.setPen(QPen(theme.text, 1.0, Qt::DotLine));
      painter.setBrush(Qt::NoBrush);
      painter.drawRoundedRect(QRectF(rects_[i]).adjusted(-1.5, -1.5, 1.5, 1.5), 5, 5);
    }
  }
}

int TokenChips::chip_at(QPoint pos) const {
  for (int i = 0; i < rects_.size(); ++i) {
    if (rects_[i].contains(pos)) return i;
  }
  return -1;
}

QRect TokenChips::chip_rect(int index) const {
  return index >= 0 && index < rects_.size() ? rects_[index] : QRect();
}

QString TokenChips::selected_text() const {
  QString text;
  for (int i = 0; i < tokens().size(); ++i) {
    if (selection_->isRowSelected(i)) text += tokens()[i].text;
  }
  return text;
}

bool TokenChips::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int index = chip_at(help->pos());
    if (index >= 0) {
      QToolTip::showText(help->globalPos(), tooltip_for(index), this, rects_[index]);
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  if (event->type() == QEvent::FontChange) tokens_changed();
  return QWidget::event(event);
}

int TokenChips::chip_in_next_row(int from, int direction) const {
  if (from < 0 || from >= rects_.size()) return from;
  const QRect& here = rects_[from];
  int best = from;
  int best_distance = INT_MAX;
  for (int i = 0; i < rects_.size(); ++i) {
    const bool next_row =
        direction < 0 ? rects_[i].bottom() < here.top() : rects_[i].top() > here.bottom();
    if (!next_row) continue;
    // The nearest row first, then the chip nearest across.
    const int rows = std::abs(rects_[i].center().y() - here.center().y());
    const int across = std::abs(rects_[i].center().x() - here.center().x());
    const int distance = rows * 10000 + across;
    if (distance < best_distance) {
      best_distance = distance;
      best = i;
    }
  }
  return best;
}

int TokenChips::chip_after_key(int key, int from) const {
  const int last = static_cast<int>(tokens().size()) - 1;
  switch (key) {
    case Qt::Key_Left:
      return std::max(from - 1, 0);
    case Qt::Key_Right:
      return std::min(from + 1, last);
    case Qt::Key_Up:
      return chip_in_next_row(std::max(from, 0), -1);
    case Qt::Key_Down:
      return chip_in_next_row(std::max(from, 0), +1);
    case Qt::Key_Home:
      return 0;
    case Qt::Key_End:
      return last;
    default:
      return -1;
  }
}

void TokenChips::keyPressEvent(QKeyEvent* event) {
  if (tokens().isEmpty()) return QWidget::keyPressEvent(event);
  if (event->matches(QKeySequence::Copy)) {
    const QString text = selected_text();
    if (!text.isEmpty()) QApplication::clipboard()->setText(text);
    return;
  }
  if (event->matches(QKeySequence::SelectAll)) {
    selection_->select(QItemSelection(model_->index(0), model_->index(model_->rowCount() - 1)),
                       QItemSelectionModel::ClearAndSelect);
    return;
  }
  const int to = chip_after_key(event->key(), current_chip());
  if (to < 0) return QWidget::keyPressEvent(event);
  move_current(to, event->modifiers().testFlag(Qt::ShiftModifier));
}

void TokenChips::mousePressEvent(QMouseEvent* event) {
  setFocus(Qt::MouseFocusReason);
  const int index = chip_at(event->position().toPoint());
  if (index >= 0) move_current(index, event->modifiers().testFlag(Qt::ShiftModifier));
  QWidget::mousePressEvent(event);
}

void TokenChips::move_current(int to, bool extend) {
  const QModelIndex target = model_->index(to);
  if (!extend || anchor_ < 0 || anchor_ >= tokens().size()) {
    anchor_ = to;
    selection_->setCurrentIndex(target, QItemSelectionModel::ClearAndSelect);
    return;
  }
  // Shift: every chip from where the selection began to this one.
  selection_->setCurrentIndex(target, QItemSelectionModel::NoUpdate);
  selection_->select(
      QItemSelection(model_->index(std::min(anchor_, to)), model_->index(std::max(anchor_, to))),
      QItemSelectionModel::ClearAndSelect);
}

void TokenChips::current_changed(const QModelIndex& current) {
  update();
  if (!current.isValid()) return;
  // Inside a scroll area: scroll the current chip into view.
  QWidget* viewport = parentWidget();
  if (auto* area = viewport ? qobject_cast<QScrollArea*>(viewport->parentWidget()) : nullptr) {
    const QRect chip = chip_rect(current.row());
    area->ensureVisible(chip.center().x(), chip.center().y(), chip.width(), chip.height());
  }
  if (QAccessible::isActive()) {
    QAccessibleEvent focus(this, QAccessible::Focus);
    focus.setChild(current.row());
    QAccessible::updateAccessibility(&focus);
  }
}

ChipsScroll::ChipsScroll(TokenChips* chips, int max_lines, QWidget* parent)
    : QScrollArea(parent), max_lines_(max_lines) {
  setWidget(chips);
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  cap_height();
}

void ChipsScroll::changeEvent(QEvent* event) {
  QScrollArea::changeEvent(event);
  if (event->type() == QEvent::FontChange) cap_height();  // larger type, taller rows
}

// The scroll area's font: the chips inherit it, perhaps after this area heard of the change.
void ChipsScroll::cap_height() { setMaximumHeight(TokenChips::height_of_lines(max_lines_, font())); }

}  // namespace servescope::gui
