// The main window: building its actions, toolbar, panels, status bar and menus, and wiring them
// to the engine worker.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "app/cli/commands.h"
#include "app/common/limits.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/wheel_guard.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/window/window_text.h"
#include "engine/compute/devices.h"
#include "engine/model/model.h"
#include "engine/serving/kv_budget.h"
#include "widgets/quantisation_panel.h"
#include "widgets/theme.h"

namespace servescope::gui {

void MainWindow::build_settings_table() {
  settings_table_.add("engine/classmates", classmates_, 0);
  settings_table_.add("engine/max_tokens", max_tokens_, kDefaultMaxTokens);
  settings_table_.add("engine/kv_type", kv_picker_, static_cast<int>(gguf::GgmlType::F16));
  settings_table_.add("engine/speed", speed_picker_, static_cast<int>(Speed::kRealTime));
  settings_table_.add("engine/static_batching", batching_picker_, false);
  settings_table_.add("engine/batch_wait_ms", batch_wait_, kDefaultBatchWaitMs);
  settings_table_.add("engine/kv_budget_mib", kv_budget_, 0);  // automatic
  settings_table_.add("sampling/greedy", greedy_, false);
  settings_table_.add("sampling/temperature", temperature_, 0.8);
  settings_table_.add("sampling/top_k", top_k_, 0);  // all
  settings_table_.add("sampling/top_p", top_p_, 0.95);
  settings_table_.add("sampling/seed", seed_, 0);
  settings_table_.add("sampling/samples", samples_, 1);
  settings_table_.apply_defaults();
}

void MainWindow::build_actions() {
  generate_action_ =
      make_action(tr("&Generate"), QKeySequence("Ctrl+Return"),
                  tr("Generate a continuation of the prompt; classmates join while it runs"), this);
  connect(generate_action_, &QAction::triggered, this, &MainWindow::generate);
  stop_action_ = make_action(tr("S&top"), QKeySequence(Qt::Key_Escape),
                             tr("Stop the generation or the batch sweep"), this);
  connect(stop_action_, &QAction::triggered, this, &MainWindow::stop);
  step_action_ =
      make_action(tr("St&ep"), QKeySequence("Ctrl+."),
                  tr("Run exactly one engine step: one token for every decoding request"), this);
  connect(step_action_, &QAction::triggered, this, &MainWindow::step);
  sweep_action_ = make_action(tr("S&weep"), QKeySequence("Ctrl+Shift+B"),
                              tr("Measure throughput and decode-step time at max batch 1 to 16, "
                                 "each with twice as many simulated clients as slots"),
                              this);
  connect(sweep_action_, &QAction::triggered, this, &MainWindow::sweep_batch_sizes);
  open_action_ = make_action(tr("&Open GGUF..."), QKeySequence::Open,
                             tr("Open any GGUF model file"), this);
  connect(open_action_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"),
                                                      QFileInfo(model_path_).absolutePath(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) open_model(path);
  });

  for (QAction* action : {generate_action_, stop_action_, step_action_, sweep_action_}) {
    action->setShortcutContext(Qt::WindowShortcut);
    addAction(action);
  }
}

void MainWindow::build_central() {
  auto* left = new QWidget;
  auto* column = new QVBoxLayout(left);
  column->setContentsMargins(8, 8, 8, 8);

  // Plain text, bold by its font: a rich-text label shows no mnemonic.
  auto* prompt_label = new QLabel(tr("&Prompt"));
  QFont bold = prompt_label->font();
  bold.setBold(true);
  prompt_label->setFont(bold);
  column->addWidget(prompt_label);
  prompt_ = new QPlainTextEdit;
  prompt_label->setBuddy(prompt_);
  prompt_->setPlaceholderText(tr("Type a prompt; its tokens appear below as you type."));
  prompt_->setToolTip(
      tr("The prompt. A short pause after typing prefills its new tokens into the "
         "KV cache, reusing the blocks of the part already there."));
  prompt_->setMaximumHeight(110);
  column->addWidget(prompt_);
  prefill_timer_ = new QTimer(this);
  prefill_timer_->setSingleShot(true);
  prefill_timer_->setInterval(kPrefillPauseMs);
  connect(prompt_, &QPlainTextEdit::textChanged, this, &MainWindow::on_prompt_edited);
  connect(prefill_timer_, &QTimer::timeout, this, [this] {
    engine_->prefill(prompt_->toPlainText());
    prompt_chips_->set_pending_from(-1);
  });

  prompt_chips_ = new TokenChips(TokenChips::Shading::kAlternating);
  prompt_chips_->setAccessibleName(tr("Prompt tokens"));
  prompt_chips_->setToolTip(tr("The prompt's tokens; dashed ones are not yet in the KV cache"));
  prompt_chips_->set_placeholder(tr("The prompt's tokens appear here."));
  // A long prompt's chips scroll after four lines instead of crushing the controls below.
  column->addWidget(new ChipsScroll(prompt_chips_, 4));

  auto* buttons = new QHBoxLayout;
  for (QAction* action : {generate_action_, stop_action_, step_action_, sweep_action_}) {
    auto* button = new QToolButton;
    button->setDefaultAction(action);
    button->setToolButtonStyle(Qt::ToolButtonTextOnly);
    button->setMinimumWidth(64);  // even buttons; 80 held the window over 1,280 px
    buttons->addWidget(button);
  }
  buttons->addStretch();
  column->addLayout(buttons);

  auto* sampling = new QGroupBox(tr("Sampling"));
  auto* form = new QFormLayout(sampling);
  greedy_ = new QCheckBox(tr("Greed&y (always the most likely token)"));
  greedy_->setToolTip(tr("Greedy decoding: the most likely token every time; turn off to sample"));
  temperature_ = new QDoubleSpinBox;
  temperature_->setRange(0.05, 3.0);
  temperature_->setSingleStep(0.05);
  temperature_->setToolTip(
      tr("Temperature divides the logits: below 1 sharpens the distribution, "
         "above 1 flattens it"));
  top_k_ = new QSpinBox;
  top_k_->setRange(0, 100000);
  top_k_->setSpecialValueText(tr("all"));
  top_k_->setToolTip(tr("Top-k: sample only among the k most likely tokens (all: no limit)"));
  top_p_ = new QDoubleSpinBox;
  top_p_->setRange(0.01, 1.0);
  top_p_->setSingleStep(0.05);
  top_p_->setToolTip(
      tr("Top-p (nucleus): sample among the fewest tokens whose probabilities add "
         "up to p"));
  seed_ = new QSpinBox;
  seed_->setRange(0, 1 << 30);
  seed_->setToolTip(tr("Seed of the sampler: the same seed gives the same tokens"));
  samples_ = new QSpinBox;
  samples_->setRange(1, app::kMaxSamples);
  samples_->setToolTip(
      tr("Samples of the prompt: each continues it on its own (sample i with seed + i). The "
         "prompt is computed once and its KV blocks are shared; the KV Cache tab shows each "
         "shared block's reference count and the copy a sample makes when it first writes "
         "into a shared block (copy-on-write)"));
  // addRow(text, field) makes the label the field's buddy.
  form->addRow(greedy_);
  form->addRow(tr("Temperat&ure"), temperature_);
  form->addRow(tr("Top-&k"), top_k_);
  form->addRow(tr("Top-&p"), top_p_);
  form->addRow(tr("See&d"), seed_);
  form->addRow(tr("Samp&les"), samples_);
  column->addWidget(sampling);
  connect(greedy_, &QCheckBox::toggled, this, &MainWindow::send_sampling);
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(top_k_, &QSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(top_p_, &QDoubleSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(seed_, &QSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(samples_, &QSpinBox::valueChanged, this, [this](int n) { engine_->set_samples(n); });

  // Wrapped: one line of it held the whole window at least 1,367 px wide.
  auto* generated =
      new QLabel(tr("<b>Generated</b> (shade: the token's probability; hover for "
                    "the alternatives)"));
  generated->setWordWrap(true);
  column->addWidget(generated);
  output_chips_ = new TokenChips(TokenChips::Shading::kProbability);
  output_chips_->setAccessibleName(tr("Generated tokens"));
  output_chips_->set_placeholder(
      tr("Press Generate (%1).").arg(shortcut_text(generate_action_->shortcut())));
  auto* scroll = new QScrollArea;
  scroll->setWidget(output_chips_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  column->addWidget(scroll, 1);
  samples_text_ = new QLabel;
  samples_text_->setWordWrap(true);
  samples_text_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  samples_text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  samples_text_->setAccessibleName(tr("Further samples"));
  samples_scroll_ = new QScrollArea;
  samples_scroll_->setWidget(samples_text_);
  samples_scroll_->setWidgetResizable(true);
  samples_scroll_->setFrameShape(QFrame::NoFrame);
  samples_scroll_->hide();
  column->addWidget(samples_scroll_, 1);

  message_ = new QLabel;
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();
  column->addWidget(message_);

  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->setAccessibleName(tr("Panels"));
  for (const PanelId id : kAllPanels) tabs_->addTab(panels_->panel(id), panel_title_text(id));

  // A panel shown again catches up at once, not at the next record.
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    on_frame();
    // The lab measures the local model: not while the panels show a server's.
    if (current_panel() == PanelId::kQuantisation && !remote_) quant_lab_->panel_shown();
    Q_EMIT panel_shown(current_panel());
  });

  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->setObjectName("main-splitter");
  // The pinned run's figures sit above every panel (lecture mode shows them too).
  auto* panels = new QWidget;
  panels->setObjectName("panel-column");  // a replay puts its bar on top
  auto* panel_column = new QVBoxLayout(panels);
  panel_column->setContentsMargins(0, 0, 0, 0);
  panel_column->setSpacing(0);
  // The pinned figures share their line with the recording mark (--record), if any.
  auto* figures_row = new QHBoxLayout;
  figures_row->setObjectName("figures-row");
  figures_row->addWidget(pinned_->strip(), 1);
  panel_column->addLayout(figures_row);
  panel_column->addWidget(tabs_, 1);
  // A window too short for the controls (no window manager to grow it) scrolls them instead
  // of overprinting the sampling rows.
  auto* left_scroll = new QScrollArea;
  left_scroll->setWidget(left);
  left_scroll->setWidgetResizable(true);
  left_scroll->setFrameShape(QFrame::NoFrame);
  guard_wheel_in(left);
  splitter->addWidget(left_scroll);
  splitter->addWidget(panels);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({400, 1000});
  setCentralWidget(splitter);

  overlay_ = new QLabel(tabs_);
  overlay_->setAttribute(Qt::WA_TransparentForMouseEvents);
  overlay_->setStyleSheet(
      "QLabel { background: rgba(0,0,0,170); color: white; padding: 6px; font-family: monospace; "
      "}");
  overlay_->hide();
}

void MainWindow::build_status_bar() {
  status_device_ = new QLabel;
  status_device_->setToolTip(
      tr("The backend and device running the model, with the driver version"));
  status_model_ = new QLabel;
  status_model_->setToolTip(tr("The model, its parameter count and the bytes of its weights"));
  status_kv_ = new QLabel;
  status_kv_->setToolTip(tr("KV cache bytes held by requests now, of the cache's capacity"));
  status_rate_ = new QLabel;
  status_rate_->setToolTip(
      tr("Tokens the engine processed (prefill and decode) in the last second"));
  status_batching_ = new QLabel;
  status_batching_->setToolTip(
      tr("The batching policy the engine runs, and while a static batch collects: how many "
         "requests wait, of the batch's places, and when it runs at the latest"));
  status_random_ = new QLabel;
  status_random_->setToolTip(
      tr("This model's weights are random (a timing model): its speed and memory are real, its "
         "text is not"));
  status_random_->hide();
  for (QLabel* label : {status_random_, status_device_, status_model_, status_kv_, status_batching_,
                        status_rate_}) {
    statusBar()->addPermanentWidget(label);
  }
}

void MainWindow::build_menus() {
  QMenu* file = file_menu_ = menuBar()->addMenu(tr("&File"));
  file->addAction(open_action_);
  // The heading the model picker uses too, with a mnemonic for the menu.
  add_timing_models(
      file->addMenu(tr("&%1").arg(QCoreApplication::translate("WindowText", kTimingGroup))));
  file->addSeparator();
  connect_action_ = file->addAction(tr("Connect to a &server..."), this, &MainWindow::ask_for_server);
  connect_action_->setShortcut(QKeySequence("Ctrl+Shift+O"));
  set_tip_with_shortcut(connect_action_,
                        tr("Attach to a real serving engine (llama-server, vLLM): your prompt and "
                           "the classmates go there, and the panels show what it reports"));
  disconnect_action_ =
      file->addAction(tr("Dis&connect from the server"), this, &MainWindow::disconnect_from_server);
  set_tip_with_shortcut(disconnect_action_, tr("Back to the local engine"));
  disconnect_action_->setEnabled(false);
  file->addSeparator();
  QAction* details =
      file->addAction(tr("Model &details..."), this, &MainWindow::show_model_details);
  details->setShortcut(QKeySequence("Ctrl+I"));
  set_tip_with_shortcut(
      details, tr("The loaded model's shape, tensor types and sizes, and where it comes from"));
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(generate_action_);
  run->addAction(stop_action_);
  run->addAction(step_action_);
  run->addAction(sweep_action_);
  run->addSeparator();
  run->addAction(pinned_->pin_action());
  run->addAction(pinned_->unpin_action());

  QMenu* view = view_menu_ = menuBar()->addMenu(tr("&View"));
  dark_action_ = view->addAction(tr("&Dark theme"));
  dark_action_->setCheckable(true);
  dark_action_->setShortcut(QKeySequence("Ctrl+Shift+D"));
  connect(dark_action_, &QAction::toggled, this, &MainWindow::set_dark_theme);
  // The platform's zoom keys (Ctrl++ and Ctrl+-), and Ctrl+= for keyboards where + needs Shift.
  QAction* bigger = view->addAction(tr("B&igger font"), this, [this] { scale_font(1); });
  QList<QKeySequence> zoom_in = QKeySequence::keyBindings(QKeySequence::ZoomIn);
  if (!zoom_in.contains(QKeySequence("Ctrl+="))) zoom_in << QKeySequence("Ctrl+=");
  bigger->setShortcuts(zoom_in);
  QAction* smaller = view->addAction(tr("S&maller font"), this, [this] { scale_font(-1); });
  smaller->setShortcuts(QKeySequence::ZoomOut);
  view->addSeparator();
  for (const PanelId id : kAllPanels) {
    // Each panel's first letter is its mnemonic: no two panels share one.
    QAction* show =
        view->addAction(tr("&%1").arg(panel_title_text(id)), this, [this, id] { show_panel(id); });
    show->setShortcut(QKeySequence(QString("Alt+%1").arg(static_cast<int>(id) + 1)));
  }
  view->addSeparator();
  QAction* here_and_there =
      view->addAction(tr("&Here and there..."), this, &MainWindow::show_deployments);
  here_and_there->setShortcut(QKeySequence("Ctrl+Shift+H"));
  set_tip_with_shortcut(here_and_there,
                        tr("The engine's formulas on well-known models and devices, next to this "
                           "machine as measured"));
  overlay_action_ = view->addAction(tr("Frame-time &overlay"));
  overlay_action_->setCheckable(true);
  overlay_action_->setShortcut(QKeySequence(Qt::Key_F12));
  connect(overlay_action_, &QAction::toggled, this, [this](bool on) {
    overlay_->setVisible(on);
    if (on) update_overlay();
  });

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About ServeScope"), this, [this] {
    QMessageBox::about(this, tr("About ServeScope"), about_text(engine_info()));
  });
  about->setMenuRole(QAction::AboutRole);
  about->setToolTip(tr("ServeScope's version, Qt's, the backend and device driver, and the model"));
}

}  // namespace servescope::gui
