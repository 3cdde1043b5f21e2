// Lecture mode's strip and screen: the step's text, the prediction, the notices and the
// progress line laid out for a hall, full screen with large type. Its keys are lecture_keys.cpp's.
#include "app/gui/lesson_ui/lecture_mode.h"

#include <QAction>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFontInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLayout>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QShortcut>
#include <QStyle>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>
#include <span>

#include "app/common/limits.h"
#include "app/gui/lesson_ui/page_parts.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/panels/panel_host.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/shortcut_tip.h"
#include "widgets/chart_painting.h"
#include "widgets/panel_view.h"

namespace servescope::gui {
namespace {

// The keys that do something now, one line each at 1280x720 and 24 px. While a step asks its
// prediction, one line: the question and its options need the room, and the run's and the
// "what if" keys have nothing to act on before the run. Otherwise the lesson, the run on
// screen, the class's "what if"s.
constexpr const char* kKeysAsking = QT_TRANSLATE_NOOP(
    "LectureMode",
    "Space run   O/\u21e7O the class's prediction   PgUp back   1-7 panel   N/\u21e7N lesson   "
    "T text   Esc leave");
constexpr const char* kKeys = QT_TRANSLATE_NOOP(
    "LectureMode",
    "Space next   R run again   PgUp back   N/\u21e7N lesson   T text   Esc leave\n"
    "1-7 panel   P pause   S step   M slow   \u23ce generate   K pin   D theme\n"
    "C/\u21e7C classmates   Q/\u21e7Q weights   A batching   W/\u21e7W wait   G backend");

constexpr int kProgressTickMs = 250;

}  // namespace

LectureMode::LectureMode(MainWindow& window)
    : QObject(&window), window_(window), action_(new QAction(tr("L&ecture mode"), &window)) {
  action_->setCheckable(true);
  action_->setShortcut(QKeySequence(Qt::Key_F11));
  action_->setToolTip(
      tr("Lecture mode (%1): full screen, large type, high contrast, one lesson step and one "
         "panel at a time. Space or Page Down next, Page Up back, O the class's prediction, "
         "R run the step again, P pause, S one decode step, M slow motion, 1-7 panels, "
         "Return generate, K pin the run's figures, D theme, C classmates, Q weights, "
         "A batching, W batch wait, G backend, Esc leave.")
          .arg(shortcut_text(action_->shortcut())));
  connect(action_, &QAction::toggled, this, &LectureMode::set_active);

  strip_ = new QDockWidget(&window);
  strip_->setObjectName("lecture-strip");
  strip_->setTitleBarWidget(new QWidget(strip_));  // no title bar: nothing to drag in a hall
  strip_->setFeatures(QDockWidget::NoDockWidgetFeatures);
  content_ = new QWidget;
  auto* column = new QVBoxLayout(content_);
  column->setContentsMargins(24, 6, 24, 4);
  column->setSpacing(2);
  title_ = new QLabel;
  title_->setObjectName("lecture-title");
  title_->setWordWrap(true);
  more_ = new QLabel(tr("\u25bc more below: Down"));
  more_->setObjectName("lecture-more");
  more_->setAlignment(Qt::AlignRight | Qt::AlignTop);
  more_->hide();
  auto* title_row = new QHBoxLayout;
  title_row->addWidget(title_, 1);
  title_row->addWidget(more_, 0, Qt::AlignTop);
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
  connect(scroll_->verticalScrollBar(), &QScrollBar::rangeChanged, this,
          &LectureMode::update_more_cue);
  connect(scroll_->verticalScrollBar(), &QScrollBar::valueChanged, this,
          &LectureMode::update_more_cue);
  predict_ = wrapping_label({}, Qt::MarkdownText);
  predict_->setObjectName("lecture-predict");
  predict_->hide();
  number_row_ = new QWidget;
  auto* number_layout = new QHBoxLayout(number_row_);
  number_layout->setContentsMargins(0, 0, 0, 0);
  number_ = prediction_number_field("lecture-number");
  number_->setButtonSymbols(QAbstractSpinBox::NoButtons);
  number_->installEventFilter(this);
  auto* number_label = new QLabel(tr("The class's number (Return takes it, Esc not):"));
  number_label->setBuddy(number_);  // a screen reader names the box by it
  number_layout->addWidget(number_label);
  number_layout->addWidget(number_);
  number_layout->addStretch(1);
  number_row_->hide();
  key_legend_ = new QLabel(tr(kKeys));
  key_legend_->setObjectName("lecture-keys");
  key_legend_->setWordWrap(true);
  column->addLayout(title_row);
  column->addWidget(scroll_, 1);
  column->addWidget(predict_);
  column->addWidget(number_row_);
  column->addWidget(build_notice_row());
  column->addWidget(key_legend_);
  strip_->setWidget(content_);
  window.addDockWidget(Qt::TopDockWidgetArea, strip_);
  strip_->hide();

  bind_keys();

  connect(&window_, &MainWindow::generation_finished, this, &LectureMode::ran_something);
  connect(&window_.work(), &WorkProgress::changed, this, &LectureMode::show_progress);
  connect(progress_timer_, &QTimer::timeout, this, &LectureMode::show_progress);
  // A refused load or experiment would otherwise show only in the hidden controls column.
  connect(&window_, &MainWindow::failed, this, [this](const QString& message) {
    if (active_) say(message.section('\n', 0, 0), 3 * kNoticeMs);
  });
}

QWidget* LectureMode::build_notice_row() {
  notice_row_ = new QWidget;
  auto* row = new QHBoxLayout(notice_row_);
  row->setContentsMargins(0, 0, 0, 0);
  notice_ = new QLabel;
  notice_->setObjectName("lecture-notice");
  QFont bold = notice_->font();
  bold.setBold(true);
  notice_->setFont(bold);
  notice_->setContentsMargins(0, 0, 32, 0);  // apart from the progress line beside it
  progress_text_ = new QLabel;
  progress_text_->setObjectName("lecture-progress");
  progress_bar_ = new QProgressBar;
  progress_bar_->setObjectName("lecture-progress-bar");
  progress_bar_->setTextVisible(false);
  progress_bar_->setRange(0, 1000);
  progress_bar_->setMaximumWidth(240);
  // Neither line may widen the strip past the screen (the step's text would stop wrapping):
  // a long pair shares the row, cut at its end, for the few seconds the notice shows.
  for (QLabel* label : {notice_, progress_text_}) label->setMinimumWidth(1);
  row->addWidget(notice_);
  row->addWidget(progress_text_);
  row->addWidget(progress_bar_, 1);
  row->addStretch();
  notice_row_->hide();

  notice_timer_ = new QTimer(this);
  notice_timer_->setSingleShot(true);
  connect(notice_timer_, &QTimer::timeout, this, [this] {
    notice_->clear();
    update_notice_row();
  });
  progress_timer_ = new QTimer(this);
  progress_timer_->setInterval(kProgressTickMs);
  return notice_row_;
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
    saved_geometry_ = window_.geometry();
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
    window_.showFullScreen();
    fill_screen();
    if (QScreen* screen = window_.screen()) {
      screen_resized_ = connect(screen, &QScreen::geometryChanged, this, &LectureMode::fill_screen);
    }
    show_progress();
    window_.setFocus();
  } else {
    close_number(false);
    disconnect(screen_resized_);
    strip_->hide();
    notice_->clear();
    progress_timer_->stop();
    window_.setFont(saved_font_);
    QToolTip::setFont(saved_tooltip_font_);
    window_.set_high_contrast(false);
    window_.set_controls_visible(true);
    window_.setMinimumSize(0, 0);  // not explicit any more: the layout's minimum binds again
    // Layouts inside docks hidden meanwhile (the Learn pane) kept the sizes they computed in
    // the lecture font, and would hold the window 112 px wider than before: they recompute.
    for (QLayout* layout : window_.findChildren<QLayout*>()) layout->invalidate();
    if (!was_full_screen_) {
      if (was_maximized_) {
        window_.showMaximized();
      } else {
        window_.showNormal();
        window_.setGeometry(saved_geometry_);
      }
    }
  }
}

void LectureMode::fill_screen() {
  const QScreen* screen = window_.screen();
  if (screen == nullptr) return;
  // Full screen is only a request where no window manager grants it (Xvfb, a kiosk): the
  // window takes the screen itself. An explicit minimum size keeps the layout's own minimum
  // (a long step, a tall panel) from growing the window past the screen's edge; a fixed size
  // would do too, but a window manager may refuse full screen to a window it cannot resize.
  const QRect area = screen->geometry();
  window_.setMinimumSize(1, 1);
  window_.setGeometry(area);
  fit_strip();
}

int LectureMode::strip_ceiling(const QRect& screen) const {
  // Below the strip every panel keeps its minimum height (the tallest of the six, so 1 .. 6
  // never shows one cut), with what sits around it in the panels' column as laid out now
  // (the pinned figures, the replay's bar) and the separator above it.
  const PanelHost& host = window_.panels();
  int tallest = 0;
  for (const PanelId id : kAllPanels) {
    tallest = std::max(tallest, host.panel(id)->minimumSizeHint().height());
  }
  const QWidget* shown = host.panel(window_.current_panel());
  const QWidget* column = window_.centralWidget();
  const int around = column && shown ? std::max(column->height() - shown->height(), 0) : 0;
  return screen.height() - tallest - around -
         window_.style()->pixelMetric(QStyle::PM_DockWidgetSeparatorExtent);
}

void LectureMode::fit_strip() {
  const QScreen* screen = window_.screen();
  if (screen == nullptr) return;
  const QRect area = screen->geometry();
  const QMargins margins = content_->layout()->contentsMargins();
  const int width = area.width() - margins.left() - margins.right();
  const int spacing = content_->layout()->spacing();
  const auto tall = [&](const QWidget* part, int at_width) {
    if (part->isHidden()) return 0;
    return (part->hasHeightForWidth() ? part->heightForWidth(at_width)
                                      : part->sizeHint().height()) +
           spacing;
  };
  // Beside the cue a long title wraps; short of room the text gives way (down to a line, with
  // its cue), not the title or the question.
  // (A label's height for a width is never below its minimum: the old one goes first.)
  const int title_width = width - more_->sizeHint().width();
  title_->setMinimumHeight(0);
  title_->setMinimumHeight(title_->heightForWidth(title_width));
  predict_->setMinimumHeight(0);
  if (!predict_->isHidden()) predict_->setMinimumHeight(predict_->heightForWidth(width));
  scroll_->setMinimumHeight(body_->fontMetrics().lineSpacing());
  // A third of the screen for the step; the panel keeps the rest (at 1280x720 480 pixels,
  // more than any panel's minimum height). Before its run (a lesson's introduction, a step's
  // question) the step shows whole where the screen has room, each part as tall as it wraps at
  // the strip's width; after a run, only as much of its text as a third leaves, but never a
  // question cut.
  const int scroll_bar = scroll_->verticalScrollBar()->sizeHint().width();
  const int text = before_run_ ? body_->heightForWidth(width - scroll_bar)
                               : body_->fontMetrics().lineSpacing();
  const int wanted = margins.top() + margins.bottom() + tall(title_, title_width) + text +
                     spacing + tall(predict_, width) + tall(number_row_, width) +
                     tall(notice_row_, width) + tall(key_legend_, width);
  const int third = area.height() / 3;
  strip_->setFixedHeight(std::clamp(wanted, third, std::max(third, strip_ceiling(area))));
}

void LectureMode::ask_number(double now, const QString& unit) {
  number_->setSuffix(unit.isEmpty() ? QString() : " " + unit);
  number_->setValue(now);
  number_row_->show();
  fit_strip();
  // The digits, Space and Return type into the box meanwhile, not into lecture mode's keys.
  for (QShortcut* key : keys_) key->setEnabled(false);
  number_->setFocus();
  number_->selectAll();
}

bool LectureMode::asking_number() const { return !number_row_->isHidden(); }

void LectureMode::close_number(bool take) {
  if (!asking_number()) return;
  number_row_->hide();
  for (QShortcut* key : keys_) key->setEnabled(active_);
  window_.setFocus();
  if (take) Q_EMIT number_entered(number_->value());
  fit_strip();
}

bool LectureMode::eventFilter(QObject* watched, QEvent* event) {
  if (watched == number_ && event->type() == QEvent::KeyPress) {
    switch (static_cast<QKeyEvent*>(event)->key()) {
      case Qt::Key_Return:
      case Qt::Key_Enter:
        close_number(true);
        return true;
      case Qt::Key_Escape:
        close_number(false);
        return true;
      default:
        break;
    }
  }
  if (watched == number_ && event->type() == QEvent::FocusOut) close_number(false);
  return QObject::eventFilter(watched, event);
}

void LectureMode::ran_something() {
  // The panel shows a run now (a "what if" answered before the step's own): it gets the room.
  before_run_ = false;
  if (active_) fit_strip();
}

void LectureMode::update_more_cue() {
  // Less than half a line out of view is the text's margin, not a line the class misses.
  const QScrollBar* bar = scroll_->verticalScrollBar();
  more_->setVisible(bar->maximum() - bar->value() > body_->fontMetrics().lineSpacing() / 2);
}

void LectureMode::scroll_by(int pages) {
  QScrollBar* bar = scroll_->verticalScrollBar();
  bar->setValue(bar->value() + pages * bar->pageStep() * 3 / 4);
}

void LectureMode::set_step(const QString& title, const QString& markdown,
                           const QString& prediction, bool before_run) {
  close_number(false);  // asked for the step before
  before_run_ = before_run;
  title_->setText(title);
  body_->setText(markdown);
  predict_->setText(prediction);
  predict_->setVisible(!prediction.isEmpty());
  key_legend_->setText(tr(prediction.isEmpty() ? kKeys : kKeysAsking));
  scroll_->verticalScrollBar()->setValue(0);
  if (active_) fit_strip();
}

QString LectureMode::step_title() const { return title_->text(); }

QString LectureMode::notice() const { return notice_->text(); }

QString LectureMode::progress_line() const { return progress_text_->text(); }

void LectureMode::say(const QString& text, int ms) {
  notice_->setText(text);
  notice_timer_->start(ms);
  update_notice_row();
}

void LectureMode::show_progress() {
  const WorkProgress& work = window_.work();
  const bool shown = active_ && work.busy();
  progress_text_->setText(shown ? work.line() : QString());
  progress_bar_->setVisible(shown);
  if (shown) {
    const double fraction = work.fraction();
    progress_bar_->setMaximum(fraction < 0.0 ? 0 : 1000);  // 0: busy, no fraction known
    progress_bar_->setValue(fraction < 0.0 ? 0 : static_cast<int>(fraction * 1000.0));
    if (!progress_timer_->isActive()) progress_timer_->start();
  } else {
    progress_timer_->stop();
  }
  update_notice_row();
}

void LectureMode::update_notice_row() {
  notice_->setVisible(!notice_->text().isEmpty());
  progress_text_->setVisible(!progress_text_->text().isEmpty());
  const bool shown = notice_->isVisibleTo(notice_row_) || progress_text_->isVisibleTo(notice_row_);
  if (shown == notice_row_->isVisibleTo(content_)) return;
  notice_row_->setVisible(shown);
  if (active_) fit_strip();  // a grown strip keeps the question whole under the notice too
}

}  // namespace servescope::gui
