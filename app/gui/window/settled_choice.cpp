#include "app/gui/window/settled_choice.h"

#include <QComboBox>
#include <QTimer>
#include <algorithm>

namespace servescope::gui {

SettledChoice::SettledChoice(QComboBox& picker, QObject* parent)
    : QObject(parent), picker_(picker), timer_(new QTimer(this)) {
  timer_->setSingleShot(true);
  timer_->setInterval(kSettleMs);
  connect(timer_, &QTimer::timeout, this, &SettledChoice::choose);
}

QString SettledChoice::step(int delta) {
  const int count = picker_.count();
  if (count == 0) return {};
  const int from = settling() ? target_ : std::max(picker_.currentIndex(), 0);
  target_ = ((from + delta) % count + count) % count;
  picker_.setCurrentIndex(target_);
  timer_->start();
  return picker_.itemText(target_);
}

bool SettledChoice::settling() const { return timer_->isActive(); }

void SettledChoice::choose() {
  // The target again: an engine that became ready meanwhile shows what it loaded in the picker.
  if (target_ < 0 || target_ >= picker_.count()) return;
  picker_.setCurrentIndex(target_);
  Q_EMIT picker_.activated(target_);
}

}  // namespace servescope::gui
