// The window's two toolbars: Engine (model, backend, weights, KV type, classmates, speed, max
// tokens) and Serving (batching and its wait, the KV budget, the CPU's activations).
#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QSpinBox>
#include <QToolBar>
#include <algorithm>
#include <cmath>

#include "app/cli/commands.h"
#include "app/common/limits.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/replay_player.h"
#include "app/gui/recording/trace_recorder.h"
#include "app/gui/remote/remote_connection.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/progress_store.h"
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

void MainWindow::build_toolbar() {
  QToolBar* bar = addToolBar(tr("Engine"));
  bar->setObjectName("engine-toolbar");
  bar->setMovable(false);

  auto* model_label = new QLabel(tr(" &Model "));
  bar->addWidget(model_label);
  model_picker_ =
      new ModelPicker(timing_models_, timing_folder_, bundled_vocab_, remember_settings_);
  model_label->setBuddy(model_picker_);
  bar->addWidget(model_picker_);
  bar->addAction(open_action_);
  connect(model_picker_, &ModelPicker::model_chosen, this, &MainWindow::open_model);
  connect(model_picker_, &ModelPicker::timing_model_chosen, this, &MainWindow::open_timing_model);

  auto* backend_label = new QLabel(tr("  &Backend "));
  bar->addWidget(backend_label);
  backend_picker_ = new QComboBox;
  backend_label->setBuddy(backend_picker_);
  backend_picker_->setObjectName("backend-picker");
  backend_picker_->setPlaceholderText(tr("none"));
  backend_picker_->setToolTip(
      tr("Where the model runs. On a laptop without a GPU the CPU backend is faster than Vulkan "
         "on lavapipe, which emulates a GPU on the same CPU cores."));
  bar->addWidget(backend_picker_);
  backend_choice_ = new SettledChoice(*backend_picker_, this);
  fill_backend_picker();
  connect(backend_picker_, &QComboBox::activated, this, [this](int index) {
    const int device = backend_picker_->itemData(index).toInt();
    set_backend(device < 0 ? backend_choice_of(compute::BackendKind::kCpu)
                           : backend_choice_of(compute::BackendKind::kVulkan, device));
  });

  auto* weights_label = new QLabel(tr("  Weight&s "));
  bar->addWidget(weights_label);
  weights_picker_ = new QComboBox;
  weights_label->setBuddy(weights_picker_);
  weights_picker_->setObjectName("weights-picker");
  weights_choice_ = new SettledChoice(*weights_picker_, this);
  weights_picker_->addItem(tr("as loaded"), QString());
  for (const char* type : {"f16", "q8_0", "q4_0"}) {
    weights_picker_->addItem(QString(type).toUpper(), QString(type));
  }
  weights_picker_->setToolTip(
      tr("Precision of the weights: as the file stores them, or re-encoded to F16, Q8_0 (8-bit "
         "blocks) or Q4_0 (4-bit blocks). Quantising runs in the background; the model in use "
         "keeps serving until the new one is ready."));
  bar->addWidget(weights_picker_);
  connect(weights_picker_, &QComboBox::activated, this, [this](int index) {
    const QString type = weights_picker_->itemData(index).toString();
    engine_->set_weight_type(type);
  });

  auto* kv_label = new QLabel(tr("  &KV "));
  bar->addWidget(kv_label);
  kv_picker_ = new QComboBox;
  kv_label->setBuddy(kv_picker_);
  kv_picker_->setToolTip(
      tr("Precision of the keys and values the KV cache stores: F32 (4 bytes), "
         "F16 (2 bytes) or Q8_0 (1.06 bytes per element)"));
  for (const gguf::GgmlType type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0}) {
    kv_picker_->addItem(kv_type_label(type), static_cast<int>(type));
  }
  bar->addWidget(kv_picker_);
  connect(kv_picker_, &QComboBox::activated, this, [this](int index) {
    set_kv_type(static_cast<gguf::GgmlType>(kv_picker_->itemData(index).toInt()));
  });

  auto* classmates_label = new QLabel(tr("  &Classmates "));
  bar->addWidget(classmates_label);
  classmates_ = new QSpinBox;
  classmates_label->setBuddy(classmates_);
  classmates_->setRange(0, app::kMaxClassmates);
  classmates_->setToolTip(tr("Simulated classmates: requests from other clients that share the "
                             "engine's batches while you generate (0-%1)")
                              .arg(app::kMaxClassmates));
  bar->addWidget(classmates_);
  connect(classmates_, &QSpinBox::valueChanged, this,
          [this](int count) {
            engine_->set_classmates(count);
            if (remote_) remote_->set_classmates(count);
          });

  auto* speed_label = new QLabel(tr("  S&peed "));
  bar->addWidget(speed_label);
  speed_picker_ = new QComboBox;
  speed_label->setBuddy(speed_picker_);
  speed_picker_->addItem(tr("Real time"), static_cast<int>(Speed::kRealTime));
  speed_picker_->addItem(tr("Slow motion"), static_cast<int>(Speed::kSlowMotion));
  speed_picker_->addItem(tr("Single step"), static_cast<int>(Speed::kSingleStep));
  // Step's own shortcut, as the platform spells it, not keys written into the text.
  speed_picker_->setToolTip(tr("Real time: steps as fast as the engine runs; slow motion: one step "
                               "every 0.4 s; single step: only when you press Step (%1)")
                                .arg(shortcut_text(step_action_->shortcut())));
  bar->addWidget(speed_picker_);
  connect(speed_picker_, &QComboBox::activated, this, [this](int index) {
    set_speed(static_cast<Speed>(speed_picker_->itemData(index).toInt()));
  });

  auto* max_tokens_label = new QLabel(tr("  Ma&x tokens "));
  bar->addWidget(max_tokens_label);
  max_tokens_ = new QSpinBox;
  max_tokens_label->setBuddy(max_tokens_);
  max_tokens_->setRange(1, app::kMaxTokens);
  max_tokens_->setToolTip(
      tr("The most tokens your generation produces (it also stops at the end "
         "of the model's context or at the end-of-text token)"));
  bar->addWidget(max_tokens_);
  connect(max_tokens_, &QSpinBox::valueChanged, this,
          [this](int count) { engine_->set_max_tokens(count); });
}

void MainWindow::build_serving_toolbar() {
  addToolBarBreak();
  QToolBar* bar = addToolBar(tr("Serving"));
  bar->setObjectName("serving-toolbar");
  bar->setMovable(false);

  auto* batching_label = new QLabel(tr(" B&atching "));
  bar->addWidget(batching_label);
  batching_picker_ = new QComboBox;
  batching_label->setBuddy(batching_picker_);
  batching_picker_->setObjectName("batching-picker");
  batching_picker_->addItem(tr("continuous"), false);
  batching_picker_->addItem(tr("static"), true);
  batching_picker_->setItemData(
      0, tr("Continuous batching: a waiting request joins the running batch at the next step"),
      Qt::ToolTipRole);
  batching_picker_->setItemData(
      1,
      tr("Static batching: requests wait until the batch is full or the oldest has waited the "
         "batch wait, then the batch runs to its end with no newcomers"),
      Qt::ToolTipRole);
  batching_picker_->setToolTip(
      tr("How requests form batches: continuous (join at any step) or static (collect a batch, "
         "then run it to its end). Static batching trades time to first token for fuller "
         "batches."));
  bar->addWidget(batching_picker_);

  auto* batch_wait_label = new QLabel(tr("  Batch wa&it "));
  bar->addWidget(batch_wait_label);
  batch_wait_ = new QSpinBox;
  batch_wait_label->setBuddy(batch_wait_);
  batch_wait_->setObjectName("batch-wait");
  batch_wait_->setRange(0, app::kMaxBatchWaitMs);
  batch_wait_->setSingleStep(50);
  batch_wait_->setSuffix(tr(" ms"));
  batch_wait_->setToolTip(
      tr("Static batching: the longest the oldest waiting request waits for the batch to fill "
         "before the batch runs anyway (0: run whoever is waiting at once)"));
  bar->addWidget(batch_wait_);
  connect(batching_picker_, &QComboBox::activated, this, [this] { send_batching(); });
  connect(batch_wait_, &QSpinBox::valueChanged, this, [this] { send_batching(); });

  auto* kv_budget_label = new QLabel(tr("  KV b&udget "));
  bar->addWidget(kv_budget_label);
  kv_budget_ = new QSpinBox;
  kv_budget_label->setBuddy(kv_budget_);
  kv_budget_->setObjectName("kv-budget");
  kv_budget_->setRange(0, max_kv_budget_mib());
  kv_budget_->setSpecialValueText(tr("auto"));  // 0: 128 blocks, at most the engine's default
  kv_budget_->setSuffix(tr(" MiB"));
  kv_budget_->setKeyboardTracking(false);  // one engine rebuild per value, not per keystroke
  kv_budget_->setToolTip(
      tr("The KV cache's memory: the pool holds as many blocks as this buys, and a prompt must "
         "fit in it. auto: 128 blocks (2,048 tokens). A lower KV precision holds more tokens in "
         "the same budget."));
  bar->addWidget(kv_budget_);
  connect(kv_budget_, &QSpinBox::valueChanged, this,
          [this](int mib) { engine_->set_kv_budget_mib(mib); });

  auto* activations_label = new QLabel(tr("  Activatio&ns "));
  bar->addWidget(activations_label);
  activations_picker_ = new QComboBox;
  activations_label->setBuddy(activations_picker_);
  activations_picker_->setObjectName("activations-picker");
  activations_picker_->addItem(tr("F32 (exact)"), false);
  activations_picker_->addItem(tr("Q8_0 (8-bit)"), true);
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
      cpu ? tr("CPU backend: F32 multiplies the activations exactly; Q8_0 rounds them to 8 bits "
               "per block of 32 and takes integer dot products with Q8_0 / Q4_0 / Q4_K weights "
               "(llama.cpp's method: faster, plus the activations' rounding error). Choose "
               "Q8_0, Q4_0 or Q4_K weights to see a difference; the model reloads.")
          : tr("Only the CPU backend quantises activations; the Vulkan backend always multiplies "
               "in float. Choose the CPU backend to compare."));
}

void MainWindow::add_timing_models(QMenu* menu) {
  menu->setObjectName("timing-models-menu");
  menu->setToolTipsVisible(true);
  menu->setToolTip(timing_tooltip(timing_folder_));
  for (const TimingModel& m : timing_models_) {
    QAction* action = menu->addAction(tr("&%1").arg(timing_model_title(m, bundled_vocab_)), this,
                                      [this, m] { open_timing_model(m); });
    action->setToolTip(timing_tooltip(timing_folder_));
  }
}

void MainWindow::fill_backend_picker() {
  const compute::DeviceList devices = compute::list_devices();
  backend_picker_->clear();
  backend_picker_->addItem(tr("CPU (OpenBLAS)"), -1);
  backend_picker_->setItemData(
      0,
      tr("%1, %2 cores. On a laptop without a GPU the CPU backend is faster than Vulkan on "
         "lavapipe.")
          .arg(QString::fromStdString(devices.cpu.model_name))
          .arg(devices.cpu.cores),
      Qt::ToolTipRole);
  const std::optional<uint32_t> default_gpu = compute::default_vulkan_device(devices);
  if (!default_gpu) backend_picker_->setItemData(0, true, kDefaultBackendRole);
  for (const compute::vulkan::DeviceDescription& d : devices.vulkan) {
    if (!d.has_compute_queue) continue;
    const QString name = QString::fromStdString(d.name);
    backend_picker_->addItem(compute::runs_on_the_cpu(d)
                                 ? tr("Vulkan on the CPU (software): %1").arg(name)
                                 : tr("Vulkan %1: %2").arg(d.index).arg(name),
                             static_cast<int>(d.index));
    if (default_gpu == d.index) {
      backend_picker_->setItemData(backend_picker_->count() - 1, true, kDefaultBackendRole);
    }
    backend_picker_->setItemData(
        backend_picker_->count() - 1,
        (compute::runs_on_the_cpu(d)
             ? tr("%1 device, driver %2 %3. It runs on the CPU cores: the CPU backend is usually "
                  "faster")
             : tr("%1 device, driver %2 %3"))
            .arg(QString::fromStdString(d.type), QString::fromStdString(d.driver_name),
                 QString::fromStdString(d.driver_info)),
        Qt::ToolTipRole);
  }
}

}  // namespace servescope::gui
