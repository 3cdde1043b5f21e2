#include "app/gui/window/wheel_guard.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QObject>
#include <QWidget>

namespace servescope::gui {

namespace {

class WheelGuard final : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    auto* box = qobject_cast<QWidget*>(watched);
    if (box == nullptr || box->hasFocus()) return false;
    event->ignore();  // passed on to the scroll area around the box
    return true;
  }
};

}  // namespace

void guard_wheel_in(QWidget* column) {
  auto* guard = new WheelGuard(column);
  const auto guard_box = [guard](QWidget* box) {
    box->setFocusPolicy(Qt::StrongFocus);  // not the wheel's focus
    box->installEventFilter(guard);
  };
  for (QAbstractSpinBox* box : column->findChildren<QAbstractSpinBox*>()) guard_box(box);
  for (QComboBox* box : column->findChildren<QComboBox*>()) guard_box(box);
}

}  // namespace servescope::gui
