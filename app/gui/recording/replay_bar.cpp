#include "app/gui/recording/replay_bar.h"

#include <QAction>
#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/gui/recording/replay_player.h"
#include "app/gui/window/shortcut_tip.h"

namespace servescope::gui {
namespace {

QToolButton* button_for(QAction* action) {
  auto* button = new QToolButton;
  button->setDefaultAction(action);
  button->setToolButtonStyle(Qt::ToolButtonTextOnly);
  return button;
}

QString seconds(double ms) { return QString::number(ms / 1000.0, 'f', 1) + " s"; }

}  // namespace

QString replay_banner(const ReplayPlayer& player) {
  const QString recorded = QString::fromStdString(player.header().recorded_at);
  const QDateTime when = QDateTime::fromString(recorded, Qt::ISODate);
  const EngineInfo& engine = player.first_engine();
  return ReplayBar::tr("Replay of %1, %2 (%3)")
      .arg(when.isValid() ? when.toUTC().toString("d MMM yyyy HH:mm 'UTC'") : recorded,
           engine.device,
           engine.backend == "vulkan" ? ReplayBar::tr("Vulkan") : ReplayBar::tr("CPU"));
}

ReplayBar::ReplayBar(ReplayPlayer& player, QWidget* window)
    : player_(player),
      banner_(new QLabel(replay_banner(player))),
      time_(new QLabel),
      seek_(new QSlider(Qt::Horizontal)),
      play_(new QAction(tr("Pause"), this)) {
  setObjectName("replay-bar");
  banner_->setObjectName("replay-banner");
  QFont bold = banner_->font();
  bold.setBold(true);
  banner_->setFont(bold);
  banner_->setToolTip(
      tr("A recorded run played back: no engine runs here, and the figures are those measured on "
         "the machine that recorded it"));

  play_->setShortcut(QKeySequence("Ctrl+Shift+Space"));
  set_tip_with_shortcut(play_, tr("Pause or go on playing the recording"));
  connect(play_, &QAction::triggered, this, [this] {
    if (player_.playing()) {
      player_.pause();
    } else if (player_.at_end()) {
      player_.seek(0.0);
      player_.play();
    } else {
      player_.play();
    }
  });
  auto* step = make_action(tr("Step"), QKeySequence("Ctrl+Shift+Right"),
                           tr("Pause and play the next engine step"), this);
  connect(step, &QAction::triggered, &player_, &ReplayPlayer::step);
  auto* restart = make_action(tr("Start"), QKeySequence("Ctrl+Shift+Home"),
                              tr("Back to the start of the recording"), this);
  connect(restart, &QAction::triggered, this, [this] { player_.seek(0.0); });
  for (QAction* action : {play_, step, restart}) {
    action->setShortcutContext(Qt::WindowShortcut);
    window->addAction(action);  // the keys work while lecture mode hides the menus
  }

  seek_->setObjectName("replay-seek");
  seek_->setRange(0, static_cast<int>(player_.duration_ms()));
  seek_->setTracking(false);  // a seek replays from the start: once, where the handle is let go
  seek_->setToolTip(tr("Where the replay is in the recorded run; drag to go there"));
  seek_->setAccessibleName(tr("Replay position"));
  connect(seek_, &QSlider::valueChanged, this, [this](int ms) { player_.seek(ms); });

  // The banner on a row of its own, wrapped where lecture mode's large text needs it: the
  // date and the device must stay readable beside nothing else.
  banner_->setWordWrap(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(button_for(restart));
  controls->addWidget(button_for(play_));
  controls->addWidget(button_for(step));
  controls->addWidget(seek_, 1);
  controls->addWidget(time_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 2, 6, 2);
  layout->setSpacing(2);
  layout->addWidget(banner_);
  layout->addLayout(controls);
  connect(&player_, &ReplayPlayer::moved, this, &ReplayBar::show_position);
  show_position();
}

QString ReplayBar::banner() const { return banner_->text(); }

void ReplayBar::show_position() {
  play_->setText(player_.playing() ? tr("Pause") : player_.at_end() ? tr("Replay") : tr("Play"));
  const QSignalBlocker quiet(seek_);  // not a seek of the user's
  seek_->setValue(static_cast<int>(player_.position_ms()));
  time_->setText(tr("%1 of %2, %3x")
                     .arg(seconds(player_.position_ms()), seconds(player_.duration_ms()))
                     .arg(player_.speed(), 0, 'g', 3));
}

}  // namespace servescope::gui
