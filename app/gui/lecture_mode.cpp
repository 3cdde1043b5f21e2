#include "app/gui/lecture_mode.h"

#include <QAction>
#include <QDockWidget>
#include <QFontInfo>
#include <QLabel>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QMenu>
#include <QMenuBar>
#include <QShortcut>
#include <QToolTip>
#include <functional>
#include <QVBoxLayout>

#include "app/gui/main_window.h"
#include "widgets/chart_painting.h"
#include "widgets/panel_view.h"

namespace servescope::gui {
namespace {

constexpr const char* kKeys =
    "Space next   PgUp back   N / Shift+N lesson   P pause   S step   M slow   1-6 panels   "
    "T text   Esc";

}  // namespace

LectureMode::LectureMode(MainWindow& window)
    : QObject(&window), window_(window), action_(new QAction("Lecture mode", &window)) {
  action_->setCheckable(true);
  action_->setShortcut(QKeySequence(Qt::Key_F11));
  action_->setToolTip(
      "Lecture mode (F11): full screen, large type, high contrast, one lesson step and one "
      "panel at a time. Space or Page Down next, Page Up back, P pause, S one decode step, "
      "M slow motion, 1-6 panels, Esc leave.");
  connect(action_, &QAction::toggled, this, &LectureMode::set_active);

  strip_ = new QDockWidget(&window);
  strip_->setObjectName("lecture-strip");
  strip_->setTitleBarWidget(new QWidget(strip_));  // no title bar: nothing to drag in a hall
  strip_->setFeatures(QDockWidget::NoDockWidgetFeatures);
  auto* content = new QWidget;
  auto* column = new QVBoxLayout(content);
  column->setContentsMargins(24, 6, 24, 4);
  column->setSpacing(2);
  title_ = new QLabel;
  title_->setObjectName("lecture-title");
  title_->setWordWrap(true);
  body_ = new QLabel;
  body_->setObjectName("lecture-body");
  body_->setTextFormat(Qt::MarkdownText);
  body_->setWordWrap(true);
  body_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  // A long step scrolls (Up / Down) instead of pushing the panel off the screen.
  scroll_ = new QScrollArea;
  scroll_->setWidget(body_);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* keys = new QLabel(kKeys);
  keys->setObjectName("lecture-keys");
  keys->setWordWrap(true);
  column->addWidget(title_);
  column->addWidget(scroll_, 1);
  column->addWidget(keys);
  strip_->setWidget(content);
  window.addDockWidget(Qt::TopDockWidgetArea, strip_);
  strip_->hide();

  add_key(QKeySequence(Qt::Key_Space), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_PageDown), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_Right), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_PageUp), [this] { Q_EMIT back_requested(); });
  add_key(QKeySequence(Qt::Key_N), [this] { Q_EMIT lesson_requested(+1); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_N), [this] { Q_EMIT lesson_requested(-1); });
  add_key(QKeySequence(Qt::Key_Left), [this] { Q_EMIT back_requested(); });
  add_key(QKeySequence(Qt::Key_P), [this] { toggle_pause(); });
  add_key(QKeySequence(Qt::Key_S), [this] { single_step(); });
  add_key(QKeySequence(Qt::Key_M), [this] { toggle_slow_motion(); });
  add_key(QKeySequence(Qt::Key_Escape), [this] { action_->setChecked(false); });
  add_key(QKeySequence(Qt::Key_T), [this] { strip_->setVisible(!strip_->isVisible()); });
  add_key(QKeySequence(Qt::Key_Down), [this] { scroll_by(1); });
  add_key(QKeySequence(Qt::Key_Up), [this] { scroll_by(-1); });
  for (const PanelId id : kAllPanels) {
    add_key(QKeySequence(Qt::Key_1 + static_cast<int>(id)), [this, id] { window_.show_panel(id); });
  }
}

void LectureMode::add_key(const QKeySequence& key, std::function<void()> act) {
  auto* shortcut = new QShortcut(key, &window_);
  shortcut->setContext(Qt::WindowShortcut);
  shortcut->setEnabled(false);  // only in lecture mode: Space and the letters type elsewhere
  connect(shortcut, &QShortcut::activated, this, std::move(act));
  keys_.push_back(shortcut);
}

QFont LectureMode::lecture_font() const {
  // Points, so the charts' smaller and larger fonts (which scale point sizes) follow.
  QFont font = saved_font_.family().isEmpty() ? window_.font() : saved_font_;
  const double dpi = window_.logicalDpiY() > 0 ? window_.logicalDpiY() : 96.0;
  font.setPointSizeF(kBodyPx * 72.0 / dpi);
  return font;
}

int LectureMode::smallest_font_px() const {
  return QFontInfo(widgets::chart::small_font(lecture_font())).pixelSize();
}

void LectureMode::set_active(bool on) {
  if (on == active_) return;
  active_ = on;
  if (action_->isChecked() != on) action_->setChecked(on);
  for (QShortcut* key : keys_) key->setEnabled(on);
  lend_keys(on);
  carry_menu_actions(on);
  if (on) {
    saved_font_ = window_.font();
    was_full_screen_ = window_.isFullScreen();
    was_maximized_ = window_.isMaximized();
    window_.setFont(lecture_font());
    saved_tooltip_font_ = QToolTip::font();
    QToolTip::setFont(lecture_font());  // a tooltip is read from the back row too
    QFont title_font = lecture_font();
    title_font.setPointSizeF(title_font.pointSizeF() * 1.15);
    title_font.setBold(true);
    title_->setFont(title_font);
    window_.set_controls_visible(false);
    window_.set_high_contrast(true);
    strip_->show();
    // The step's text gets a third of the screen; the panel keeps the rest (at 1280x720 that
    // is 480 pixels, every panel's minimum height).
    strip_->setFixedHeight(window_.screen() ? window_.screen()->geometry().height() / 3 : 240);
    window_.showFullScreen();
    // Without a window manager (a kiosk, Xvfb) full screen is only a request: take the screen.
    if (window_.screen()) window_.setGeometry(window_.screen()->geometry());
    window_.setFocus();
  } else {
    strip_->hide();
    window_.setFont(saved_font_);
    QToolTip::setFont(saved_tooltip_font_);
    window_.set_high_contrast(false);
    window_.set_controls_visible(true);
    if (!was_full_screen_) {
      if (was_maximized_) {
        window_.showMaximized();
      } else {
        window_.showNormal();
      }
    }
  }
}

void LectureMode::scroll_by(int pages) {
  QScrollBar* bar = scroll_->verticalScrollBar();
  bar->setValue(bar->value() + pages * bar->pageStep() * 3 / 4);
}

void LectureMode::lend_keys(bool on) {
  // The window's own actions give up lecture mode's keys meanwhile (Esc is Stop there), so no
  // key is ambiguous.
  if (on) {
    for (QAction* a : window_.findChildren<QAction*>()) {
      if (a == action_) continue;
      for (QShortcut* key : keys_) {
        if (a->shortcut() == key->key()) {
          lent_.emplace_back(a, a->shortcut());
          a->setShortcut({});
          break;
        }
      }
    }
  } else {
    for (auto& [a, key] : lent_) a->setShortcut(key);
    lent_.clear();
  }
}

void LectureMode::carry_menu_actions(bool on) {
  // A hidden menu bar takes its actions' shortcuts with it: the window carries them meanwhile.
  if (!on) {
    for (QAction* a : carried_) window_.removeAction(a);
    carried_.clear();
    return;
  }
  std::function<void(QMenu*)> carry = [&](QMenu* menu) {
    for (QAction* a : menu->actions()) {
      if (a->menu()) carry(a->menu());
      if (a->shortcut().isEmpty() || window_.actions().contains(a)) continue;
      window_.addAction(a);
      carried_.push_back(a);
    }
  };
  for (QAction* top : window_.menuBar()->actions()) {
    if (top->menu()) carry(top->menu());
  }
}

void LectureMode::set_step(const QString& title, const QString& markdown) {
  title_->setText(title);
  body_->setText(markdown);
  scroll_->verticalScrollBar()->setValue(0);
}

QString LectureMode::step_title() const { return title_->text(); }

void LectureMode::toggle_pause() {
  if (window_.speed() == Speed::kSingleStep) {
    window_.set_speed(resume_speed_);
  } else {
    resume_speed_ = window_.speed();
    window_.set_speed(Speed::kSingleStep);
  }
}

void LectureMode::single_step() {
  if (window_.speed() != Speed::kSingleStep) toggle_pause();
  window_.step();
}

void LectureMode::toggle_slow_motion() {
  const bool slow = window_.speed() == Speed::kSlowMotion;
  window_.set_speed(slow ? Speed::kRealTime : Speed::kSlowMotion);
}

}  // namespace servescope::gui
