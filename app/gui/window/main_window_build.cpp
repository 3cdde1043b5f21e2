// The main window: building its actions, toolbar, panels, status bar and menus, and wiring them
// to the engine worker.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "app/common/limits.h"
#include "app/cli/commands.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/window/action_tips.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/window/window_text.h"
#include "engine/compute/devices.h"
#include "engine/model/model.h"
#include "engine/serving/kv_budget.h"
#include "widgets/quantisation_panel.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

// The largest KV budget the window offers: the machine's memory (64 GiB where it is unknown).
int max_kv_budget_mib() {
  const uint64_t memory = serving::physical_memory_bytes();
  return static_cast<int>(std::min<uint64_t>(memory > 0 ? memory / serving::kMiB : 65536, 1 << 20));
}

}  // namespace

void MainWindow::build_actions() {
  generate_action_ = new QAction(tr("&Generate"), this);
  generate_action_->setShortcut(QKeySequence("Ctrl+Return"));
  set_tip(generate_action_,
          tr("Generate a continuation of the prompt; classmates join while it runs"));
  connect(generate_action_, &QAction::triggered, this, &MainWindow::generate);

  stop_action_ = new QAction(tr("S&top"), this);
  stop_action_->setShortcut(QKeySequence(Qt::Key_Escape));
  set_tip(stop_action_, tr("Stop the generation or the batch sweep"));
  connect(stop_action_, &QAction::triggered, this, &MainWindow::stop);

  step_action_ = new QAction(tr("St&ep"), this);
  step_action_->setShortcut(QKeySequence("Ctrl+."));
  set_tip(step_action_, tr("Run exactly one engine step: one token for every decoding request"));
  connect(step_action_, &QAction::triggered, this, &MainWindow::step);

  sweep_action_ = new QAction(tr("S&weep"), this);
  sweep_action_->setShortcut(QKeySequence("Ctrl+Shift+B"));
  set_tip(sweep_action_, tr("Measure throughput and decode-step time at max batch 1 to 16, each "
                            "with twice as many simulated clients as slots"));
  connect(sweep_action_, &QAction::triggered, this, &MainWindow::sweep_batch_sizes);

  open_action_ = new QAction(tr("&Open GGUF..."), this);
  open_action_->setShortcut(QKeySequence::Open);
  set_tip(open_action_, tr("Open any GGUF model file"));
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

void MainWindow::build_toolbar() {
  QToolBar* bar = addToolBar("Engine");
  bar->setObjectName("engine-toolbar");
  bar->setMovable(false);

  auto* model_label = new QLabel(tr(" &Model "));
  bar->addWidget(model_label);
  model_picker_ = new ModelPicker(timing_models_, timing_folder_, bundled_vocab_,
                                  remember_settings_);
  model_label->setBuddy(model_picker_);
  bar->addWidget(model_picker_);
  bar->addAction(open_action_);
  connect(model_picker_, &ModelPicker::model_chosen, this, &MainWindow::open_model);
  connect(model_picker_, &ModelPicker::timing_model_chosen, this,
          &MainWindow::open_timing_model);

  bar->addWidget(new QLabel("  Backend "));
  backend_picker_ = new QComboBox;
  backend_picker_->setObjectName("backend-picker");
  backend_picker_->setPlaceholderText("none");
  backend_picker_->setToolTip(
      "Where the model runs. On a laptop without a GPU the CPU backend is faster than Vulkan on "
      "lavapipe, which emulates a GPU on the same CPU cores.");
  bar->addWidget(backend_picker_);
  backend_choice_ = new SettledChoice(*backend_picker_, this);
  fill_backend_picker();
  connect(backend_picker_, &QComboBox::activated, this, [this](int index) {
    const int device = backend_picker_->itemData(index).toInt();
    set_backend(device < 0 ? BackendChoice{compute::BackendKind::kCpu, -1}
                           : BackendChoice{compute::BackendKind::kVulkan, device});
  });

  bar->addWidget(new QLabel("  Weights "));
  weights_picker_ = new QComboBox;
  weights_picker_->setObjectName("weights-picker");
  weights_choice_ = new SettledChoice(*weights_picker_, this);
  weights_picker_->addItem("as loaded", QString());
  for (const char* type : {"f16", "q8_0", "q4_0"}) {
    weights_picker_->addItem(QString(type).toUpper(), QString(type));
  }
  weights_picker_->setToolTip(
      "Precision of the weights: as the file stores them, or re-encoded to F16, Q8_0 (8-bit "
      "blocks) or Q4_0 (4-bit blocks). Quantising runs in the background; the model in use keeps "
      "serving until the new one is ready.");
  bar->addWidget(weights_picker_);
  connect(weights_picker_, &QComboBox::activated, this, [this](int index) {
    const QString type = weights_picker_->itemData(index).toString();
    engine_->set_weight_type(type);
  });

  bar->addWidget(new QLabel("  KV "));
  kv_picker_ = new QComboBox;
  kv_picker_->setToolTip(
      "Precision of the keys and values the KV cache stores: F32 (4 bytes), "
      "F16 (2 bytes) or Q8_0 (1.06 bytes per element)");
  for (const gguf::GgmlType type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0}) {
    kv_picker_->addItem(kv_type_label(type), static_cast<int>(type));
  }
  kv_picker_->setCurrentIndex(1);
  bar->addWidget(kv_picker_);
  connect(kv_picker_, &QComboBox::activated, this, [this](int index) {
    set_kv_type(static_cast<gguf::GgmlType>(kv_picker_->itemData(index).toInt()));
  });

  bar->addWidget(new QLabel("  Classmates "));
  classmates_ = new QSpinBox;
  classmates_->setRange(0, app::kMaxClassmates);
  classmates_->setToolTip(
      "Simulated classmates: requests from other clients that share the "
      "engine's batches while you generate (0-32)");
  bar->addWidget(classmates_);
  connect(classmates_, &QSpinBox::valueChanged, this, [this](int count) {
    engine_->set_classmates(count);
  });

  bar->addWidget(new QLabel("  Speed "));
  speed_picker_ = new QComboBox;
  speed_picker_->addItem("Real time", static_cast<int>(Speed::kRealTime));
  speed_picker_->addItem("Slow motion", static_cast<int>(Speed::kSlowMotion));
  speed_picker_->addItem("Single step", static_cast<int>(Speed::kSingleStep));
  speed_picker_->setToolTip(
      "Real time: steps as fast as the engine runs; slow motion: one step "
      "every 0.4 s; single step: only when you press Step (Ctrl+.)");
  bar->addWidget(speed_picker_);
  connect(speed_picker_, &QComboBox::activated, this, [this](int index) {
    set_speed(static_cast<Speed>(speed_picker_->itemData(index).toInt()));
  });

  bar->addWidget(new QLabel("  Max tokens "));
  max_tokens_ = new QSpinBox;
  max_tokens_->setRange(1, app::kMaxTokens);
  max_tokens_->setValue(200);
  max_tokens_->setToolTip(
      "The most tokens your generation produces (it also stops at the end "
      "of the model's context or at the end-of-text token)");
  bar->addWidget(max_tokens_);
  connect(max_tokens_, &QSpinBox::valueChanged, this, [this](int count) {
    engine_->set_max_tokens(count);
  });
}

void MainWindow::build_serving_toolbar() {
  addToolBarBreak();
  QToolBar* bar = addToolBar("Serving");
  bar->setObjectName("serving-toolbar");
  bar->setMovable(false);

  bar->addWidget(new QLabel(" Batching "));
  batching_picker_ = new QComboBox;
  batching_picker_->setObjectName("batching-picker");
  batching_picker_->addItem("continuous", false);
  batching_picker_->addItem("static", true);
  batching_picker_->setItemData(
      0, "Continuous batching: a waiting request joins the running batch at the next step",
      Qt::ToolTipRole);
  batching_picker_->setItemData(
      1,
      "Static batching: requests wait until the batch is full or the oldest has waited the "
      "batch wait, then the batch runs to its end with no newcomers",
      Qt::ToolTipRole);
  batching_picker_->setToolTip(
      "How requests form batches: continuous (join at any step) or static (collect a batch, "
      "then run it to its end). Static batching trades time to first token for fuller "
      "batches.");
  bar->addWidget(batching_picker_);

  bar->addWidget(new QLabel("  Batch wait "));
  batch_wait_ = new QSpinBox;
  batch_wait_->setObjectName("batch-wait");
  batch_wait_->setRange(0, app::kMaxBatchWaitMs);
  batch_wait_->setSingleStep(50);
  batch_wait_->setValue(200);
  batch_wait_->setSuffix(" ms");
  batch_wait_->setToolTip(
      "Static batching: the longest the oldest waiting request waits for the batch to fill "
      "before the batch runs anyway (0: run whoever is waiting at once)");
  bar->addWidget(batch_wait_);
  connect(batching_picker_, &QComboBox::activated, this, [this] { send_batching(); });
  connect(batch_wait_, &QSpinBox::valueChanged, this, [this] { send_batching(); });

  bar->addWidget(new QLabel("  KV budget "));
  kv_budget_ = new QSpinBox;
  kv_budget_->setObjectName("kv-budget");
  kv_budget_->setRange(0, max_kv_budget_mib());
  kv_budget_->setSpecialValueText("auto");  // 0: 128 blocks, at most the engine's default
  kv_budget_->setSuffix(" MiB");
  kv_budget_->setKeyboardTracking(false);  // one engine rebuild per value, not per keystroke
  kv_budget_->setToolTip(
      "The KV cache's memory: the pool holds as many blocks as this buys, and a prompt must fit "
      "in it. auto: 128 blocks (2,048 tokens). A lower KV precision holds more tokens in the "
      "same budget.");
  bar->addWidget(kv_budget_);
  connect(kv_budget_, &QSpinBox::valueChanged, this, [this](int mib) {
    engine_->set_kv_budget_mib(mib);
  });

  bar->addWidget(new QLabel("  Activations "));
  activations_picker_ = new QComboBox;
  activations_picker_->setObjectName("activations-picker");
  activations_picker_->addItem("F32 (exact)", false);
  activations_picker_->addItem("Q8_0 (8-bit)", true);
  bar->addWidget(activations_picker_);
  connect(activations_picker_, &QComboBox::activated, this, [this](int index) {
    set_quantised_activations(activations_picker_->itemData(index).toBool());
  });
  update_activations_picker();
}

void MainWindow::update_activations_picker() {
  const bool cpu = backend_.kind == compute::BackendKind::kCpu;
  activations_picker_->setEnabled(cpu);
  activations_picker_->setCurrentIndex(backend_.quantised_activations ? 1 : 0);
  activations_picker_->setToolTip(
      cpu ? "CPU backend: F32 multiplies the activations exactly; Q8_0 rounds them to 8 bits "
            "per block of 32 and takes integer dot products with Q8_0 / Q4_0 / Q4_K weights "
            "(llama.cpp's method: faster, plus the activations' rounding error). Choose Q8_0, "
            "Q4_0 or Q4_K weights to see a difference; the model reloads."
          : "Only the CPU backend quantises activations; the Vulkan backend always multiplies "
            "in float. Choose the CPU backend to compare.");
}

void MainWindow::build_central() {
  auto* left = new QWidget;
  auto* column = new QVBoxLayout(left);
  column->setContentsMargins(8, 8, 8, 8);

  column->addWidget(new QLabel("<b>Prompt</b>"));
  prompt_ = new QPlainTextEdit;
  prompt_->setPlaceholderText("Type a prompt; its tokens appear below as you type.");
  prompt_->setToolTip(
      "The prompt. A short pause after typing prefills its new tokens into the "
      "KV cache, reusing the blocks of the part already there.");
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
  prompt_chips_->setToolTip("The prompt's tokens; dashed ones are not yet in the KV cache");
  prompt_chips_->set_placeholder("The prompt's tokens appear here.");
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

  auto* sampling = new QGroupBox("Sampling");
  auto* form = new QFormLayout(sampling);
  greedy_ = new QCheckBox("Greedy (always the most likely token)");
  greedy_->setToolTip("Greedy decoding: the most likely token every time; turn off to sample");
  temperature_ = new QDoubleSpinBox;
  temperature_->setRange(0.05, 3.0);
  temperature_->setSingleStep(0.05);
  temperature_->setValue(0.8);
  temperature_->setToolTip(
      "Temperature divides the logits: below 1 sharpens the distribution, "
      "above 1 flattens it");
  top_k_ = new QSpinBox;
  top_k_->setRange(0, 100000);
  top_k_->setSpecialValueText("all");
  top_k_->setToolTip("Top-k: sample only among the k most likely tokens (all: no limit)");
  top_p_ = new QDoubleSpinBox;
  top_p_->setRange(0.01, 1.0);
  top_p_->setSingleStep(0.05);
  top_p_->setValue(0.95);
  top_p_->setToolTip(
      "Top-p (nucleus): sample among the fewest tokens whose probabilities add "
      "up to p");
  seed_ = new QSpinBox;
  seed_->setRange(0, 1 << 30);
  seed_->setToolTip("Seed of the sampler: the same seed gives the same tokens");
  form->addRow(greedy_);
  form->addRow("Temperature", temperature_);
  form->addRow("Top-k", top_k_);
  form->addRow("Top-p", top_p_);
  form->addRow("Seed", seed_);
  column->addWidget(sampling);
  connect(greedy_, &QCheckBox::toggled, this, &MainWindow::send_sampling);
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(top_k_, &QSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(top_p_, &QDoubleSpinBox::valueChanged, this, &MainWindow::send_sampling);
  connect(seed_, &QSpinBox::valueChanged, this, &MainWindow::send_sampling);

  // Wrapped: one line of it held the whole window at least 1,367 px wide.
  auto* generated = new QLabel("<b>Generated</b> (shade: the token's probability; hover for "
                               "the alternatives)");
  generated->setWordWrap(true);
  column->addWidget(generated);
  output_chips_ = new TokenChips(TokenChips::Shading::kProbability);
  output_chips_->set_placeholder("Press Generate (Ctrl+Return).");
  auto* scroll = new QScrollArea;
  scroll->setWidget(output_chips_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  column->addWidget(scroll, 1);

  message_ = new QLabel;
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();
  column->addWidget(message_);

  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  for (const PanelId id : kAllPanels) {
    tabs_->addTab(panels_->panel(id), QString::fromUtf8(panel_title(id).data()));
  }

  // A panel shown again catches up at once, not at the next record.
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    on_frame();
    if (current_panel() == PanelId::kQuantisation) quant_lab_->panel_shown();
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
  status_device_->setToolTip("The backend and device running the model, with the driver version");
  status_model_ = new QLabel;
  status_model_->setToolTip("The model, its parameter count and the bytes of its weights");
  status_kv_ = new QLabel;
  status_kv_->setToolTip("KV cache bytes held by requests now, of the cache's capacity");
  status_rate_ = new QLabel;
  status_rate_->setToolTip("Tokens the engine processed (prefill and decode) in the last second");
  status_batching_ = new QLabel;
  status_batching_->setToolTip(
      "The batching policy the engine runs, and while a static batch collects: how many "
      "requests wait, of the batch's places, and when it runs at the latest");
  status_random_ = new QLabel;
  status_random_->setToolTip(
      "This model's weights are random (a timing model): its speed and memory are real, its "
      "text is not");
  status_random_->hide();
  for (QLabel* label : {status_random_, status_device_, status_model_, status_kv_, status_batching_,
                        status_rate_}) {
    statusBar()->addPermanentWidget(label);
  }
}

void MainWindow::build_menus() {
  QMenu* file = file_menu_ = menuBar()->addMenu("&File");
  file->addAction(open_action_);
  add_timing_models(file->addMenu(kTimingGroup));
  QAction* details = file->addAction("Model details...", this, &MainWindow::show_model_details);
  details->setShortcut(QKeySequence("Ctrl+I"));
  details->setToolTip(
      "The loaded model's shape, tensor types and sizes, and where it comes from (Ctrl+I)");
  file->addSeparator();
  file->addAction("Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu("&Run");
  run->addAction(generate_action_);
  run->addAction(stop_action_);
  run->addAction(step_action_);
  run->addAction(sweep_action_);
  run->addSeparator();
  run->addAction(pinned_->pin_action());
  run->addAction(pinned_->unpin_action());

  QMenu* view = view_menu_ = menuBar()->addMenu("&View");
  dark_action_ = view->addAction("Dark theme");
  dark_action_->setCheckable(true);
  dark_action_->setShortcut(QKeySequence("Ctrl+Shift+D"));
  connect(dark_action_, &QAction::toggled, this, &MainWindow::set_dark_theme);
  // The platform's zoom keys (Ctrl++ and Ctrl+-), and Ctrl+= for keyboards where + needs Shift.
  QAction* bigger = view->addAction("Bigger font", this, [this] { scale_font(1); });
  QList<QKeySequence> zoom_in = QKeySequence::keyBindings(QKeySequence::ZoomIn);
  if (!zoom_in.contains(QKeySequence("Ctrl+="))) zoom_in << QKeySequence("Ctrl+=");
  bigger->setShortcuts(zoom_in);
  QAction* smaller = view->addAction("Smaller font", this, [this] { scale_font(-1); });
  smaller->setShortcuts(QKeySequence::ZoomOut);
  view->addSeparator();
  for (const PanelId id : kAllPanels) {
    QAction* show = view->addAction(QString::fromUtf8(panel_title(id).data()), this,
                                    [this, id] { show_panel(id); });
    show->setShortcut(QKeySequence(QString("Alt+%1").arg(static_cast<int>(id) + 1)));
  }
  view->addSeparator();
  overlay_action_ = view->addAction("Frame-time overlay");
  overlay_action_->setCheckable(true);
  overlay_action_->setShortcut(QKeySequence(Qt::Key_F12));
  connect(overlay_action_, &QAction::toggled, this, [this](bool on) {
    overlay_->setVisible(on);
    if (on) update_overlay();
  });

  QMenu* help = menuBar()->addMenu("&Help");
  QAction* about = help->addAction("About ServeScope", this, [this] {
    QMessageBox::about(this, "About ServeScope", about_text(engine_info()));
  });
  about->setMenuRole(QAction::AboutRole);
  about->setToolTip("ServeScope's version, Qt's, the backend and device driver, and the model");
}

void MainWindow::connect_staggered_load() {
  connect(engine_, &EngineClient::staggered_load_progress, this,
          [this](qint64 finished, qint64 total) {
            work_->advance(WorkProgress::Task::kStaggeredLoad,
                           total > 0 ? static_cast<double>(finished) / static_cast<double>(total)
                                     : 0.0);
            statusBar()->showMessage(
                QString("Staggered load: %1 of %2 requests finished (Esc stops)...")
                    .arg(finished)
                    .arg(total));
          });
  connect(engine_, &EngineClient::staggered_load_ready, this,
          [this](const StaggeredLoadResult& result) {
            work_->finish(WorkProgress::Task::kStaggeredLoad);
            update_actions();
            statusBar()->showMessage(staggered_load_text(result), 8000);
            Q_EMIT staggered_load_finished();
          });
}

void MainWindow::compare_quantisation(const QStringList& types) {
  if (!player_) quant_lab_->compare(types);  // a replay runs no engine
}

bool MainWindow::show_quant_block(const QString& type) {
  show_panel(PanelId::kQuantisation);
  auto* panel = qobject_cast<widgets::QuantisationPanel*>(panels_->panel(PanelId::kQuantisation));
  return panel != nullptr && panel->show_block(type);
}

void MainWindow::cancel_quantisation() { quant_lab_->cancel(); }

void MainWindow::connect_engine() {
  connect(engine_, &EngineClient::engine_ready, this, &MainWindow::on_engine_ready);
  connect(engine_, &EngineClient::load_failed, this, &MainWindow::on_load_failed);
  connect(engine_, &EngineClient::failed, this, &MainWindow::on_failed);
  connect(engine_, &EngineClient::notice, this,
          [this](const QString& text) { show_message(text, false); });
  // The typed prompt's prefill is the user's request too: it is coloured as theirs.
  connect(engine_, &EngineClient::prompt_prefill_started, this,
          [this](qint64 request) { folder_.mark_own_request(request); });
  connect(engine_, &EngineClient::generation_started, this, [this](qint64 request, int) {
    folder_.mark_own_request(request);
    update_actions();
  });
  connect(engine_, &EngineClient::generation_refused, this, [this](const QString& message) {
    update_actions();
    on_failed(message);
  });
  connect(engine_, &EngineClient::generation_finished, this, [this](const QString& reason) {
    // The request's record was queued before this signal: fold it now, so whoever waits for
    // the generation reads its measures without waiting for a frame (or a busy GUI thread).
    on_frame();
    update_actions();
    statusBar()->showMessage(QString("Generation finished: %1").arg(finish_sentence(reason)), 6000);
    Q_EMIT generation_finished(reason);
  });
  connect(engine_, &EngineClient::running_changed, this, &MainWindow::update_actions);
  connect(engine_, &EngineClient::weight_progress, this,
          [this](int done, int total, const QString& type) {
            statusBar()->showMessage(
                QString("Quantising the weights to %1: tensor %2 of %3 (the current model keeps "
                        "serving)")
                    .arg(type.toUpper())
                    .arg(done)
                    .arg(total),
                done < total ? 0 : 3000);
            if (!work_->running(WorkProgress::Task::kWeights)) {
              work_->start(WorkProgress::Task::kWeights,
                           QString("Quantising the weights to %1").arg(type.toUpper()));
            }
            work_->advance(
                WorkProgress::Task::kWeights,
                total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0);
          });
  connect(engine_, &EngineClient::timing_model_progress, this, &MainWindow::show_timing_progress);
  connect(engine_, &EngineClient::load_stage, this,
          [this](const QString& stage) { work_->set_stage(WorkProgress::Task::kLoad, stage); });
  connect(engine_, &EngineClient::batch_sweep_point, this, [this](const BatchSweepPoint& point) {
    work_->advance(WorkProgress::Task::kBatchSweep,
                   static_cast<double>(batch_sweep().size()) / kBatchSweepSizes);
    statusBar()->showMessage(QString("Sweeping batch sizes: max batch %1 measured, %2 tokens/s "
                                     "(Esc stops)...")
                                 .arg(point.max_batch)
                                 .arg(point.tokens_per_s(), 0, 'f', 0));
  });
  connect(engine_, &EngineClient::batch_sweep_ready, this,
          [this](const QVector<BatchSweepPoint>& points) {
            const bool complete = points.size() == kBatchSweepSizes;
            work_->finish(WorkProgress::Task::kBatchSweep);
            update_actions();
            statusBar()->showMessage(complete
                                         ? QString("Batch sweep done")
                                         : QString("Batch sweep stopped after %1 of %2 batch sizes")
                                               .arg(points.size())
                                               .arg(kBatchSweepSizes),
                                     4000);
            Q_EMIT batch_sweep_finished();
          });
  connect_staggered_load();
  connect(engine_, &EngineClient::batching_changed, this, [this](const BatchingChoice& batching) {
    update_status();
    Q_EMIT batching_changed(batching);
  });
  connect(engine_, &EngineClient::batch_collecting, this, [this](const BatchCollecting& state) {
    collecting_at_ms_ = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
    update_status();
    Q_EMIT batch_collecting_changed(state);
  });
  connect(engine_, &EngineClient::idle, this, [this](const EngineCounters& counters) {
    on_frame();  // fold what the engine reported before saying it is idle
    Q_EMIT engine_idle(counters);
  });
}

void MainWindow::show_timing_progress(quint64 written, quint64 total, const QString& path) {
  const QString name = QFileInfo(path).fileName();
  if (total > 0 && written >= total) {
    statusBar()->showMessage(QString("Timing model %1 written; loading it").arg(name), 4000);
    work_->finish(WorkProgress::Task::kTimingModel);
    work_->start(WorkProgress::Task::kLoad, loading_what(path));
    return;
  }
  if (total > 0) {
    work_->advance(WorkProgress::Task::kTimingModel,
                   static_cast<double>(written) / static_cast<double>(total));
  }
  const QString done =
      total > 0 ? QString(": %1 of %2").arg(bytes_text(written), bytes_text(total)) : "...";
  statusBar()->showMessage(
      QString("Writing the timing model %1 (random weights)%2 (the current model keeps serving)")
          .arg(name, done));
}

}  // namespace servescope::gui
