#include "app/gui/window/token_chips_accessible.h"

#include <QAccessible>
#include <QAccessibleWidget>
#include <QPointer>
#include <algorithm>

#include "app/gui/window/token_chips.h"

namespace servescope::gui {
namespace {

// One chip: a list item with the token in words; its place on screen is the chip's.
class ChipAccessible : public QAccessibleInterface {
 public:
  ChipAccessible(TokenChips* chips, int row) : chips_(chips), row_(row) {}

  bool isValid() const override { return chips_ && row_ < chips_->model()->rowCount(); }
  QObject* object() const override { return nullptr; }
  QWindow* window() const override { return chips_ ? chips_->windowHandle() : nullptr; }
  QAccessibleInterface* parent() const override {
    return QAccessible::queryAccessibleInterface(chips_);
  }
  QAccessibleInterface* child(int) const override { return nullptr; }
  int childCount() const override { return 0; }
  int indexOfChild(const QAccessibleInterface*) const override { return -1; }
  QAccessibleInterface* childAt(int, int) const override { return nullptr; }
  QAccessible::Role role() const override { return QAccessible::ListItem; }
  void setText(QAccessible::Text, const QString&) override {}

  QString text(QAccessible::Text t) const override {
    if (!isValid()) return {};
    if (t == QAccessible::Name) return chips_->model()->spoken_text(row_);
    if (t == QAccessible::Description) {
      return chips_->model()->index(row_).data(TokenListModel::kTextRole).toString();
    }
    return {};
  }

  QRect rect() const override {
    if (!isValid()) return {};
    const QRect chip = chips_->chip_rect(row_);
    return QRect(chips_->mapToGlobal(chip.topLeft()), chip.size());
  }

  QAccessible::State state() const override {
    QAccessible::State s;
    s.selectable = true;
    s.focusable = true;
    if (!isValid()) return s;
    s.selected = chips_->selection_model()->isRowSelected(row_);
    s.focused = chips_->hasFocus() && chips_->current_chip() == row_;
    s.invisible = !chips_->isVisible();
    return s;
  }

 private:
  QPointer<TokenChips> chips_;
  int row_;
};

// The chips: a list of ChipAccessible children, made as a reader asks for them and kept
// (QAccessible caches them by id; removeInterface would invalidate a reader's handle).
class TokenChipsAccessible : public QAccessibleWidget {
 public:
  explicit TokenChipsAccessible(TokenChips* chips) : QAccessibleWidget(chips, QAccessible::List) {}
  ~TokenChipsAccessible() override {
    for (QAccessibleInterface* chip : children_) {
      QAccessible::deleteAccessibleInterface(QAccessible::uniqueId(chip));
    }
  }
  TokenChipsAccessible(const TokenChipsAccessible&) = delete;
  TokenChipsAccessible& operator=(const TokenChipsAccessible&) = delete;

  int childCount() const override { return chips()->model()->rowCount(); }

  QAccessibleInterface* child(int index) const override {
    if (index < 0 || index >= childCount()) return nullptr;
    while (children_.size() <= index) {
      auto* chip = new ChipAccessible(chips(), static_cast<int>(children_.size()));
      QAccessible::registerAccessibleInterface(chip);
      children_.push_back(chip);
    }
    return children_[index];
  }

  int indexOfChild(const QAccessibleInterface* child) const override {
    const auto at = std::find(children_.begin(), children_.end(), child);
    if (at == children_.end()) return -1;
    const int index = static_cast<int>(at - children_.begin());
    return index < childCount() ? index : -1;
  }

  QAccessibleInterface* childAt(int x, int y) const override {
    const int index = chips()->chip_at(chips()->mapFromGlobal(QPoint(x, y)));
    return index >= 0 ? child(index) : nullptr;
  }

  QAccessibleInterface* focusChild() const override {
    return chips()->current_chip() >= 0 ? child(chips()->current_chip()) : nullptr;
  }

 private:
  TokenChips* chips() const { return static_cast<TokenChips*>(widget()); }

  mutable QVector<QAccessibleInterface*> children_;
};

QAccessibleInterface* chips_factory(const QString& class_name, QObject* object) {
  if (class_name == QLatin1String("servescope::gui::TokenChips") && object->isWidgetType()) {
    return new TokenChipsAccessible(static_cast<TokenChips*>(object));
  }
  return nullptr;
}

}  // namespace

void install_token_chips_accessible() {
  static const bool installed = [] {
    QAccessible::installFactory(chips_factory);
    return true;
  }();
  (void)installed;
}

}  // namespace servescope::gui
