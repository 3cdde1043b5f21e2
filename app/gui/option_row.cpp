#include "app/gui/option_row.h"

#include <QAbstractButton>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>

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
