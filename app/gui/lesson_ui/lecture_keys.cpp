// Lecture mode's keys: single keys a lecturer presses without looking (Space next, C
// classmates, ...), what each one does, and lending the window's clashing shortcuts while
// lecture mode holds them. The strip's layout is lecture_mode.cpp's job.
#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>
#include <QShortcut>
#include <functional>
#include <span>

#include "app/common/limits.h"
#include "app/gui/lesson_ui/lecture_mode.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/main_window.h"

namespace servescope::gui {
namespace {

// The values C / Shift+C and W / Shift+W step through: a few presses reach what a class asks
// ("16 classmates?"), where the toolbar's spin boxes step by one (or 50 ms).
constexpr int kClassmateSteps[] = {0, 1, 2, 4, 8, 16, app::kMaxClassmates};
constexpr int kBatchWaitSteps[] = {0, 50, 100, 200, 500, 1000, 2000};

// The value after `now` on `ladder` going up (delta > 0) or down; past an end it stays.
int climb(std::span<const int> ladder, int now, int delta) {
  if (delta > 0) {
    for (const int value : ladder) {
      if (value > now) return value;
    }
  } else {
    for (auto it = ladder.rbegin(); it != ladder.rend(); ++it) {
      if (*it < now) return *it;
    }
  }
  return now;
}

}  // namespace

void LectureMode::bind_keys() {
  add_key(QKeySequence(Qt::Key_Space), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_PageDown), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_Right), [this] { Q_EMIT advance_requested(); });
  add_key(QKeySequence(Qt::Key_PageUp), [this] { Q_EMIT back_requested(); });
  add_key(QKeySequence(Qt::Key_N), [this] { Q_EMIT lesson_requested(+1); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_N), [this] { Q_EMIT lesson_requested(-1); });
  add_key(QKeySequence(Qt::Key_Left), [this] { Q_EMIT back_requested(); });
  add_key(QKeySequence(Qt::Key_O), [this] { Q_EMIT choice_requested(+1); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_O), [this] { Q_EMIT choice_requested(-1); });
  add_key(QKeySequence(Qt::Key_R), [this] { Q_EMIT rerun_requested(); });
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
  // A "what if" is answered by a run: Return generates (Ctrl+Return is not in the strip), K
  // pins the run before it so both stay on screen, and unpins.
  add_key(QKeySequence(Qt::Key_Return), [this] {
    ran_something();
    window_.generate();
  });
  add_key(QKeySequence(Qt::Key_K), [this] { toggle_pin(); });
  add_key(QKeySequence(Qt::Key_D), [this] { toggle_theme(); });
  add_key(QKeySequence(Qt::Key_C), [this] { step_classmates(+1); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_C), [this] { step_classmates(-1); });
  add_key(QKeySequence(Qt::Key_Q),
          [this] { say(tr("Weights: %1").arg(window_.step_weight_type(+1))); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_Q),
          [this] { say(tr("Weights: %1").arg(window_.step_weight_type(-1))); });
  add_key(QKeySequence(Qt::Key_A), [this] { toggle_batching(); });
  add_key(QKeySequence(Qt::Key_W), [this] { step_batch_wait(+1); });
  add_key(QKeySequence(Qt::SHIFT | Qt::Key_W), [this] { step_batch_wait(-1); });
  add_key(QKeySequence(Qt::Key_G),
          [this] { say(tr("Backend: %1").arg(window_.step_backend(+1))); });
}

void LectureMode::add_key(const QKeySequence& key, std::function<void()> act) {
  auto* shortcut = new QShortcut(key, &window_);
  shortcut->setContext(Qt::WindowShortcut);
  shortcut->setEnabled(false);  // only in lecture mode: Space and the letters type elsewhere
  connect(shortcut, &QShortcut::activated, this, std::move(act));
  keys_.push_back(shortcut);
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

void LectureMode::toggle_pin() {
  PinnedFigures& pinned = window_.pinned_figures();
  if (pinned.pinned()) {
    pinned.unpin();
    say(tr("Unpinned"));
  } else {
    say(pinned.pin() ? tr("Pinned: the next run's figures appear beside these")
                     : tr("Nothing to pin yet: press Return to generate first"));
  }
}

void LectureMode::toggle_theme() {
  window_.set_dark_theme(!window_.dark_theme());
  say(window_.dark_theme() ? tr("Dark theme") : tr("Light theme"));
}

void LectureMode::step_classmates(int delta) {
  window_.set_classmates(climb(kClassmateSteps, window_.classmates(), delta));
  say(tr("Classmates: %1").arg(window_.classmates()));
}

void LectureMode::toggle_batching() {
  BatchingChoice batching = window_.batching();
  batching.static_batches = !batching.static_batches;
  window_.set_batching(batching);
  say(batching.static_batches ? tr("Batching: static (batch wait %1 ms)").arg(batching.wait_ms)
                              : tr("Batching: continuous"));
}

void LectureMode::step_batch_wait(int delta) {
  BatchingChoice batching = window_.batching();
  batching.wait_ms = climb(kBatchWaitSteps, batching.wait_ms, delta);
  window_.set_batching(batching);
  say(tr("Batch wait: %1 ms%2")
          .arg(batching.wait_ms)
          .arg(batching.static_batches ? QString() : tr(" (for static batching: A)")));
}

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
