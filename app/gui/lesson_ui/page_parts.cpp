#include "app/gui/lesson_ui/page_parts.h"

#include <QAbstractButton>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QScrollBar>
#include <algorithm>

#include "widgets/number_field.h"

namespace servescope::gui {
namespace {

class OptionLabel : public QLabel {
 public:
  OptionLabel(const QString& text, QAbstractButton* button) : QLabel(text), button_(button) {
    setWordWrap(true);
    setBuddy(button);
  }

 protected:
  void mousePressEvent(QMouseEvent* event) override {
    button_->click();
    event->accept();
  }

 private:
  QAbstractButton* button_;
};

}  // namespace

PageScroll::PageScroll(const QString& name) {
  setObjectName(name);
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFocusPolicy(Qt::StrongFocus);
}

QSize PageScroll::minimumSizeHint() const {
  // It cannot scroll sideways, so the pane keeps the page's narrowest width however short
  // the lesson list's wrapped titles are.
  QSize hint = QScrollArea::minimumSizeHint();
  if (widget()) {
    hint.setWidth(std::max(hint.width(), widget()->minimumSizeHint().width() +
                                             verticalScrollBar()->sizeHint().width() +
                                             2 * frameWidth()));
  }
  return hint;
}

void PageScroll::keyPressEvent(QKeyEvent* event) {
  QScrollBar* bar = verticalScrollBar();
  switch (event->key()) {
    case Qt::Key_Home:
      bar->triggerAction(QAbstractSlider::SliderToMinimum);
      return event->accept();
    case Qt::Key_End:
      bar->triggerAction(QAbstractSlider::SliderToMaximum);
      return event->accept();
    default:
      QScrollArea::keyPressEvent(event);
  }
}

QLabel* wrapping_label(const QString& text, Qt::TextFormat format) {
  auto* label = new QLabel(text);
  label->setTextFormat(format);
  label->setWordWrap(true);
  label->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  return label;
}

QLabel* markdown_label(const char* name) {
  QLabel* label = wrapping_label({}, Qt::MarkdownText);
  label->setObjectName(name);
  label->setOpenExternalLinks(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
  return label;
}

QDoubleSpinBox* prediction_number_field(const char* name) {
  auto* field = new widgets::NumberField;
  field->setObjectName(name);
  field->setRange(0.0, 1e15);
  field->setDecimals(3);
  field->setGroupSeparatorShown(true);
  field->setSpecialValueText(QCoreApplication::translate(
      "PagePart", "your number"));  // 0: StepView::prediction() is nullopt
  return field;
}

QWidget* option_row(QAbstractButton* button, const QString& text) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  button->setToolTip(text);
  layout->addWidget(button, 0, Qt::AlignTop);
  layout->addWidget(new OptionLabel(text, button), 1);
  return row;
}

}  // namespace servescope::gui
