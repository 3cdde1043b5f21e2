#include "app/gui/window/token_chips.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

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

TokenChips::TokenChips(Shading shading, QWidget* parent) : QWidget(parent), shading_(shading) {
  // Height for width in the policy too: a resizable scroll area asks the policy, not the
  // virtual, before it gives the chips the height their rows need.
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
  setMouseTracking(true);
}

void TokenChips::set_tokens(QVector<GeneratedToken> tokens) {
  tokens_ = std::move(tokens);
  pending_from_ = -1;
  updateGeometry();
  update();
}

void TokenChips::append_tokens(const QVector<GeneratedToken>& tokens) {
  tokens_ += tokens;
  updateGeometry();
  update();
}

void TokenChips::clear_tokens() { set_tokens({}); }

void TokenChips::set_pending_from(int index) {
  pending_from_ = index;
  update();
}

void TokenChips::set_placeholder(const QString& text) {
  placeholder_ = text;
  update();
}

QString TokenChips::display_text(const QString& text) {
  QString shown = text;
  shown.replace(' ', QChar(0x00B7));   // a visible space: tokens often start with one
  shown.replace('\n', QChar(0x21B5));  // return symbol
  shown.replace('\t', QChar(0x2192));
  return shown.isEmpty() ? QString(QChar(0x2205)) : shown;
}

QVector<QRect> TokenChips::layout_chips(int width, int* height) const {
  const QFontMetrics metrics(font());
  const int chip_height = metrics.height() + 4;
  QVector<QRect> rects;
  int x = kMargin;
  int y = kMargin;
  for (const GeneratedToken& token : tokens_) {
    const int w = metrics.horizontalAdvance(display_text(token.text)) + 2 * kPadX;
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
  updateGeometry();
}

QColor TokenChips::chip_colour(int index) const {
  const widgets::Theme& theme = widgets::theme();
  const GeneratedToken& token = tokens_[index];
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
  if (tokens_.isEmpty()) {
    painter.setPen(theme.muted_text);
    painter.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, placeholder_);
    return;
  }
  int height = 0;
  rects_ = layout_chips(width(), &height);
  for (int i = 0; i < tokens_.size(); ++i) {
    const bool pending = pending_from_ >= 0 && i >= pending_from_;
    QColor fill = chip_colour(i);
    if (pending) fill = mix(theme.background, fill, 0.4);
    painter.setPen(QPen(pending ? theme.grid : mix(fill, theme.text, 0.25), 1.0,
                        pending ? Qt::DashLine : Qt::SolidLine));
    painter.setBrush(fill);
    painter.drawRoundedRect(QRectF(rects_[i]).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
    // Dark text on light chips and light text on dark ones.
    painter.setPen(fill.lightnessF() > 0.55 ? QColor(20, 20, 20) : QColor(240, 240, 240));
    painter.drawText(rects_[i], Qt::AlignCenter, display_text(tokens_[i].text));
  }
}

int TokenChips::chip_at(QPoint pos) const {
  for (int i = 0; i < rects_.size(); ++i) {
    if (rects_[i].contains(pos)) return i;
  }
  return -1;
}

QString TokenChips::tooltip_for(int index) const {
  if (index < 0 || index >= tokens_.size()) return {};
  const GeneratedToken& token = tokens_[index];
  QString text = QString("<b>%1</b> &nbsp; token id %2")
                     .arg(display_text(token.text).toHtmlEscaped())
                     .arg(token.id);
  if (token.probability >= 0.0) {
    text += QString("<br>probability %1%").arg(100.0 * token.probability, 0, 'f', 1);
  }
  if (!token.alternatives.isEmpty()) {
    text += "<br><br>the model's top choices here:<table>";
    for (const auto& [piece, p] : token.alternatives) {
      text += QString("<tr><td>%1</td><td align=right>&nbsp;%2%</td></tr>")
                  .arg(display_text(piece).toHtmlEscaped())
                  .arg(100.0 * p, 0, 'f', 1);
    }
    text += "</table>";
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
  return QWidget::event(event);
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
