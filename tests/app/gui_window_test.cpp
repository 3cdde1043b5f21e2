// The real window, offscreen, on the bundled model (CPU backend, to keep it fast): a
// generation with classmates brings every panel to life; a corrupt model file gives a clear
// message and the previous model keeps answering.
#include <fcntl.h>
#include <csignal>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QAction>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <algorithm>
#include <functional>
#include <array>
#include <cmath>
#include <fstream>

#include "app/cli/commands.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/termination.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/window_text.h"
#include "engine/compute/devices.h"
#include "engine/eval/random_model.h"
#include "engine/model/model.h"
#include "tests/support/gguf_copy.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"
#include "widgets/batching_panel.h"
#include "widgets/quantisation_panel.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::deliver_posted_events;
using testing::wait_until;
using testing::tiny_timing_model;

class WindowFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>(testing::test_window_options(cache_.path()));
    QObject::connect(window_.get(), &MainWindow::failed, window_.get(),
                     [this](const QString& message) { failure_ = message; });
    QObject::connect(window_.get(), &MainWindow::generation_finished, window_.get(),
                     [this](GenerationEnd end) { finished_ = end; });
    QObject::connect(window_.get(), &MainWindow::engine_idle, window_.get(),
                     [this](const EngineCounters&) { ++idle_count_; });
    window_->resize(1400, 900);
    window_->show();
    ASSERT_TRUE(wait_until([&] { return window_->engine_info().has_value(); }));
  }

  // Generates with greedy decoding and waits until the engine has nothing left to do.
  void generate_and_wait(int tokens, int classmates) {
    finished_.reset();
    const int idle_before = idle_count_;
    window_->set_greedy(true);
    window_->set_classmates(classmates);
    window_->set_max_tokens(tokens);
    window_->generate();
    // The window says the engine is idle once it has folded the engine's last records.
    ASSERT_TRUE(wait_until([&] { return finished_.has_value() && idle_count_ > idle_before; }));
  }

  QTemporaryDir cache_;  // the window's cache folder: timing models are written here
  std::unique_ptr<MainWindow> window_;
  std::optional<QString> failure_;
  std::optional<GenerationEnd> finished_;
  int idle_count_ = 0;
};

TEST_F(WindowFixture, OpensTheBundledModelWithTheSuggestedPrompt) {
  EXPECT_EQ(window_->engine_info()->model_path.toStdString(), cli::default_model_path());
  EXPECT_EQ(window_->engine_info()->backend, "cpu");
  // File > Model details reads the file's own figures: all 48 tensors of the bundled model are
  // F32 (assets/models/README.md).
  EXPECT_EQ(window_->engine_info()->tensor_types, "F32 48");
  EXPECT_EQ(window_->engine_info()->vocab_size, window_->engine_info()->tokenizer->size());
  // The prompt's tokens are shown as soon as the model is there: BOS and "Once upon a time".
  ASSERT_EQ(window_->prompt_tokens().size(), 5);
  EXPECT_EQ(window_->prompt_tokens().front().text, "<s>");
}

TEST_F(WindowFixture, TheStatusBarWritesBinarySizesInBinaryUnits) {
  // The bundled model's 18,459,648 bytes of weights are 17.6 MiB (17.6 MB would be 17,600,000
  // bytes), and the KV cache's bytes are binary too: no decimal unit may name them.
  const auto status_text = [&] {
    QStringList texts;
    for (const QLabel* label : window_->statusBar()->findChildren<QLabel*>()) {
      texts << label->text();
    }
    return texts.join(" | ");
  };
  ASSERT_TRUE(wait_until([&] { return status_text().contains("KV "); }))
      << status_text().toStdString();
  const QString text = status_text();
  EXPECT_TRUE(text.contains("17.6 MiB")) << text.toStdString();
  EXPECT_FALSE(text.contains(QRegularExpression("\\d ?(kB|KB|MB|GB|TB)\\b"))) << text.toStdString();
}

// The engine the window opens on warmed its kernels before the first step anyone sees.
TEST_F(WindowFixture, TheEngineIsWarmedBeforeItsFirstStep) {
  EXPECT_GT(window_->engine_info()->warm_up_ms, 0.0);
}

// A first run opens on a hardware GPU when there is one, else on the CPU backend: a Vulkan
// device on the CPU's own cores (lavapipe) is slower there, and is labelled as such.
TEST(DefaultDevice, AFirstRunOpensOnAHardwareGpuElseTheCpu) {
  app();
  QTemporaryDir cache;
  WindowOptions options;
  options.remember_settings = false;
  options.cache_folder = cache.path();
  MainWindow window(options);
  ASSERT_TRUE(wait_until([&] { return window.engine_info().has_value(); }));
  const compute::DeviceList devices = compute::list_devices();
  const std::optional<uint32_t> gpu = compute::default_vulkan_device(devices);
  EXPECT_EQ(window.engine_info()->backend, gpu ? "vulkan" : "cpu");
  if (gpu) {
    EXPECT_EQ(window.engine_info()->vulkan_device, static_cast<int>(*gpu));
  }
  auto* picker = window.findChild<QComboBox*>("backend-picker");
  ASSERT_NE(picker, nullptr);
  for (const compute::vulkan::DeviceDescription& d : devices.vulkan) {
    if (!d.has_compute_queue) continue;
    const int row = picker->findData(static_cast<int>(d.index));
    ASSERT_GE(row, 0);
    EXPECT_EQ(picker->itemText(row).startsWith("Vulkan on the CPU (software)"),
              compute::runs_on_the_cpu(d))
        << picker->itemText(row).toStdString();
  }
}

TEST_F(WindowFixture, TheQuantisationLabWaitsUntilItsPanelIsShown) {
  // Run at load it would take cores from the generation being timed (the fixture waited for
  // the engine; what its arrival set off is delivered here).
  deliver_posted_events();
  EXPECT_FALSE(window_->quant_run().running);
  EXPECT_FALSE(window_->quant_lab().has_value());
  window_->show_panel(PanelId::kQuantisation);
  EXPECT_TRUE(window_->quant_run().running);
  EXPECT_EQ(window_->quant_run().stage, "starting");
  window_->show_panel(PanelId::kPhases);
  window_->show_panel(PanelId::kQuantisation);  // shown again: the running lab is not restarted
  EXPECT_TRUE(window_->quant_run().running);
  window_->cancel_quantisation();
  EXPECT_TRUE(wait_until([&] { return !window_->quant_run().running; }));
  EXPECT_EQ(window_->quant_run().outcome, "cancelled");
}

TEST_F(WindowFixture, GeneratingWithClassmatesBringsEveryPanelToLife) {
  // Before the first Generate only the model's own figures (quantisation) may be there.
  for (const PanelId id : kAllPanels) {
    if (id != PanelId::kQuantisation) {
      EXPECT_FALSE(window_->panels().has_data(id)) << panel_key(id);
    }
  }
  const auto updates_before = [&] {
    std::array<int64_t, kAllPanels.size()> counts{};
    for (const PanelId id : kAllPanels)
      counts[static_cast<size_t>(id)] = window_->panels().updates(id);
    return counts;
  }();
  generate_and_wait(32, 2);
  ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
  EXPECT_EQ(*finished_, GenerationEnd::kMaxTokens);
  EXPECT_EQ(window_->generated_tokens().size(), 32);
  for (const GeneratedToken& token : window_->generated_tokens()) {
    EXPECT_GT(token.probability, 0.0);
    // Alternatives to show, most likely first (how many is the worker's choice).
    EXPECT_GE(token.alternatives.size(), 2);
    EXPECT_TRUE(std::ranges::is_sorted(token.alternatives, std::greater<>(),
                                       [](const auto& a) { return a.second; }));
  }
  // Each panel gets its snapshot when it is shown. The quantisation lab runs on its own
  // thread; give it the time a loaded machine needs.
  for (const PanelId id : kAllPanels) {
    window_->show_panel(id);
    EXPECT_TRUE(wait_until([&] { return window_->panels().has_data(id); })) << panel_key(id);
  }
  for (const PanelId id : kAllPanels) {
    EXPECT_TRUE(window_->panels().has_data(id)) << panel_key(id);
    // Panels fed by the engine's records got new snapshots while it ran.
    if (id != PanelId::kQuantisation) {
      EXPECT_GT(window_->panels().updates(id), updates_before[static_cast<size_t>(id)])
          << panel_key(id);
    }
  }
  // The user's request and at least two classmates finished.
  EXPECT_GE(window_->folder().counts().requests, 3);
}

TEST_F(WindowFixture, YourRequestIsTheOneThePanelsMarkAsYours) {
  generate_and_wait(6, 3);
  const int64_t user = window_->user_request();
  ASSERT_GE(user, 0);
  const int64_t updates = window_->panels().updates(PanelId::kBatching);
  window_->show_panel(PanelId::kBatching);
  ASSERT_TRUE(wait_until([&] { return window_->panels().updates(PanelId::kBatching) > updates; }))
      << "a frame: the panel hears of it";
  const auto* panel =
      dynamic_cast<const widgets::BatchingPanel*>(window_->panels().panel(PanelId::kBatching));
  ASSERT_NE(panel, nullptr);
  const widgets::OwnRequests& own = panel->snapshot().own_requests;
  EXPECT_TRUE(own.contains(user));
  int classmates = 0;
  for (const widgets::RequestLatency& r : panel->snapshot().requests) {
    if (r.request != user) {
      ++classmates;
      EXPECT_FALSE(own.contains(r.request)) << r.request;
    }
  }
  EXPECT_GE(classmates, 1);

  // A rebuilt engine numbers its requests from 0 again: the old id names none of them.
  window_->set_kv_type(gguf::GgmlType::Q8_0);
  ASSERT_TRUE(wait_until([&] {
    return window_->engine_info()->kv_type == gguf::GgmlType::Q8_0 && !window_->generating();
  }));
  EXPECT_EQ(window_->user_request(), -1);
  EXPECT_TRUE(window_->folder().own_requests().empty());
}

TEST_F(WindowFixture, TypingPrefillsThePromptAndGenerateReusesItsCachedBlocks) {
  const QString prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her friends and her dog.";
  window_->set_prompt(prompt);  // as if typed: chips at once, prefill after the pause
  const int prompt_tokens = static_cast<int>(window_->prompt_tokens().size());
  ASSERT_GT(prompt_tokens, 16);
  ASSERT_TRUE(
      wait_until([&] { return window_->folder().counts().prefill_tokens >= prompt_tokens; }));
  generate_and_wait(4, 0);
  const int64_t user = window_->folder().watched_request();
  const telemetry::RequestRecord* record = nullptr;
  for (const auto& r : window_->folder().requests()) {
    if (r.request_id == user) record = &r;
  }
  ASSERT_NE(record, nullptr);
  // Every full 16-token block of the prompt came from the prefix cache, not from a new prefill.
  EXPECT_EQ(record->cached_prompt_tokens, (prompt_tokens - 1) / 16 * 16);
  // No classmates: the typed prompt's prefill and the generation are both the user's own.
  const std::vector<int64_t>& own = window_->folder().own_requests();
  ASSERT_GE(window_->folder().requests().size(), 2u);
  for (const auto& r : window_->folder().requests()) {
    EXPECT_NE(std::find(own.begin(), own.end(), r.request_id), own.end()) << r.request_id;
  }
}

TEST_F(WindowFixture, ALongPromptScrollsItsChipsInsteadOfCrushingTheSamplingControls) {
  // A lecturer's long prompt grew the chips until Temperature to Seed overprinted each other
  // in a 557 px tall window (no window manager to grow it).
  QString prompt;
  for (int i = 0; i < 40; ++i) prompt += "Mia had a little blue boat that she kept by the pond. ";
  window_->set_prompt(prompt);
  window_->resize(1220, 557);
  ASSERT_TRUE(wait_until([&] { return window_->prompt_tokens().size() > 400; }));
  deliver_posted_events();  // laid out
  QGroupBox* sampling = nullptr;
  for (QGroupBox* box : window_->findChildren<QGroupBox*>()) {
    if (box->title() == "Sampling") sampling = box;
  }
  ASSERT_NE(sampling, nullptr);
  EXPECT_GE(sampling->height(), sampling->minimumSizeHint().height());
  auto* chips = window_->findChild<ChipsScroll*>();
  ASSERT_NE(chips, nullptr);
  EXPECT_LE(chips->height(), TokenChips::height_of_lines(4, chips->font()));
  EXPECT_GT(chips->widget()->height(), chips->height());  // the rest scrolls
}

TEST_F(WindowFixture, HelpAboutSaysTheVersionsTheDeviceAndTheModel) {
  const QString text = about_text(window_->engine_info());
  EXPECT_TRUE(text.startsWith("ServeScope ")) << text.toStdString();
  EXPECT_TRUE(text.contains(QString("Qt %1").arg(qVersion()))) << text.toStdString();
  EXPECT_TRUE(text.contains(window_->engine_info()->model_name)) << text.toStdString();
  EXPECT_TRUE(text.contains(window_->engine_info()->device)) << text.toStdString();
  EXPECT_TRUE(about_text(std::nullopt).endsWith("No model loaded yet."));
  // The menu is there, by the platform's About role.
  bool found = false;
  for (QAction* action : window_->findChildren<QAction*>()) {
    found |= action->menuRole() == QAction::AboutRole &&
             QString(action->text()).remove('&') == "About ServeScope";
  }
  EXPECT_TRUE(found);
}

TEST_F(WindowFixture, TheFontKeysAreThePlatformsZoomKeys) {
  QAction* bigger = nullptr;
  for (QAction* action : window_->findChildren<QAction*>()) {
    if (QString(action->text()).remove('&') == "Bigger font") bigger = action;
  }
  ASSERT_NE(bigger, nullptr);
  for (const QKeySequence& key : QKeySequence::keyBindings(QKeySequence::ZoomIn)) {
    EXPECT_TRUE(bigger->shortcuts().contains(key)) << key.toString().toStdString();
  }
  EXPECT_TRUE(bigger->shortcuts().contains(QKeySequence("Ctrl+=")));
}

TEST_F(WindowFixture, FontScalingReachesThePanels) {
  const double before = window_->panels().panel(PanelId::kPhases)->font().pointSizeF();
  window_->scale_font(2);
  deliver_posted_events();  // the font change reaches widgets as events
  const double after = window_->panels().panel(PanelId::kPhases)->font().pointSizeF();
  window_->scale_font(-2);
  EXPECT_NEAR(after / before, 1.15 * 1.15, 0.05);
}

TEST_F(WindowFixture, TheBatchingControlsSetTheEnginesPolicyAndThePanelSaysABatchCollects) {
  auto* picker = window_->findChild<QComboBox*>("batching-picker");
  auto* wait = window_->findChild<QSpinBox*>("batch-wait");
  ASSERT_NE(picker, nullptr);
  ASSERT_NE(wait, nullptr);
  EXPECT_FALSE(picker->toolTip().isEmpty());
  EXPECT_FALSE(wait->toolTip().isEmpty());
  wait->setValue(5000);  // long enough to look at the collecting batch
  picker->setCurrentIndex(1);
  Q_EMIT picker->activated(1);
  ASSERT_TRUE(wait_until([&] { return window_->engine_batching().static_batches; }));
  EXPECT_EQ(window_->engine_batching().wait_ms, 5000);

  std::optional<BatchCollecting> collecting;
  QObject::connect(window_.get(), &MainWindow::batch_collecting_changed, window_.get(),
                   [&](const BatchCollecting& state) { collecting = state; });
  window_->show_panel(PanelId::kBatching);
  window_->set_classmates(2);
  window_->set_max_tokens(3);
  window_->generate();
  ASSERT_TRUE(wait_until([&] { return collecting.has_value() && collecting->waiting > 0; }));
  EXPECT_EQ(collecting->waiting, 3);
  EXPECT_EQ(collecting->batch_size, window_->engine_info()->max_batch_size);
  EXPECT_TRUE(window_->collecting_status().startsWith("collecting a batch: 3 of 16, runs in"))
      << window_->collecting_status().toStdString();
  const auto* panel =
      dynamic_cast<const widgets::BatchingPanel*>(window_->panels().panel(PanelId::kBatching));
  ASSERT_NE(panel, nullptr);
  // A frame later the panel hears of it.
  EXPECT_TRUE(wait_until(
      [&] { return panel->snapshot().collecting.startsWith("collecting a batch: 3 of 16"); }))
      << panel->snapshot().collecting.toStdString();
  EXPECT_EQ(panel->snapshot().policy, "static batching, wait 5000 ms");
  EXPECT_TRUE(panel->snapshot().steps.empty());  // nothing ran while it collects
  window_->stop();
  ASSERT_TRUE(wait_until([&] { return collecting->waiting == 0 && !window_->generating(); }));

  picker->setCurrentIndex(0);
  Q_EMIT picker->activated(0);
  ASSERT_TRUE(wait_until([&] { return !window_->engine_batching().static_batches; }));
}

TEST_F(WindowFixture, TheActivationsControlRebuildsTheCpuBackendAndIsOffOnVulkan) {
  auto* picker = window_->findChild<QComboBox*>("activations-picker");
  ASSERT_NE(picker, nullptr);
  EXPECT_TRUE(picker->isEnabled());
  EXPECT_FALSE(window_->engine_info()->quantised_activations);
  picker->setCurrentIndex(1);
  Q_EMIT picker->activated(1);
  ASSERT_TRUE(wait_until([&] { return window_->engine_info()->quantised_activations; }));
  EXPECT_EQ(window_->engine_info()->backend, "cpu");
  if (compute::list_devices().vulkan.empty()) GTEST_SKIP() << "no Vulkan device here";
  testing::cache_test_machine_vulkan_roofs();  // not a probe's half minute on a cold cache
  window_->set_backend(backend_choice_of(compute::BackendKind::kVulkan, -1, true));
  ASSERT_TRUE(wait_until([&] { return window_->engine_info()->backend == "vulkan"; }));
  EXPECT_FALSE(picker->isEnabled());
  EXPECT_TRUE(picker->toolTip().contains("Only the CPU backend"));
  EXPECT_FALSE(window_->engine_info()->quantised_activations);
}

TEST_F(WindowFixture, TheBatchSweepFillsTheBatchingPanel) {
  window_->sweep_batch_sizes();  // shows the batching panel
  const auto* panel =
      dynamic_cast<const widgets::BatchingPanel*>(window_->panels().panel(PanelId::kBatching));
  ASSERT_NE(panel, nullptr);
  ASSERT_TRUE(wait_until([&] { return !window_->sweeping(); }));
  // The frame after the sweep's answer draws its last point.
  ASSERT_TRUE(wait_until([&] { return panel->snapshot().sweep.size() >= 5u; }));
  const auto& sweep = panel->snapshot().sweep;
  ASSERT_EQ(sweep.size(), 5u);
  for (size_t i = 0; i < sweep.size(); ++i) {
    EXPECT_EQ(sweep[i].max_batch, int64_t{1} << i);
    EXPECT_GT(sweep[i].tokens_per_s, 0.0);
    EXPECT_GT(sweep[i].step_latency_ms, 0.0);
  }
  EXPECT_TRUE(window_->message().isEmpty()) << window_->message().toStdString();
}

TEST_F(WindowFixture, StoppingTheBatchSweepKeepsTheSizesMeasuredSoFar) {
  window_->sweep_batch_sizes();
  // Points arrive one batch size at a time; stop (Esc) after the first.
  ASSERT_TRUE(wait_until([&] { return !window_->batch_sweep().isEmpty(); }));
  window_->stop();
  ASSERT_TRUE(wait_until([&] { return !window_->sweeping(); }));
  const QVector<BatchSweepPoint>& sweep = window_->batch_sweep();
  ASSERT_GE(sweep.size(), 1);
  ASSERT_LT(sweep.size(), kBatchSweepSizes);  // stopped before the last size
  for (int i = 0; i < sweep.size(); ++i) {
    EXPECT_EQ(sweep[i].max_batch, int64_t{1} << i);
    EXPECT_GT(sweep[i].tokens_per_s(), 0.0);
  }
  const QString status = window_->statusBar()->currentMessage();
  EXPECT_TRUE(status.contains("stopped after")) << status.toStdString();
  // The live engine serves as before.
  generate_and_wait(6, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 6);
}

TEST_F(WindowFixture, ACorruptModelFileLeavesThePreviousModelServing) {
  QTemporaryDir dir;
  const QString corrupt = dir.filePath("corrupt.gguf");
  {
    std::ofstream out(corrupt.toStdString(), std::ios::binary);
    out << "GGUF" << std::string(64, '\x7f');  // the magic, then nonsense
  }
  const QString previous = window_->engine_info()->model_path;
  window_->open_model(corrupt);
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains("corrupt.gguf")) << failure_->toStdString();
  EXPECT_TRUE(failure_->contains("Still serving")) << failure_->toStdString();
  EXPECT_EQ(window_->message(), *failure_);  // shown inside the window
  EXPECT_EQ(window_->engine_info()->model_path, previous);

  generate_and_wait(8, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 8);
}

TEST_F(WindowFixture, ATimingModelIsWrittenToTheCacheLoadedAndLabelledRandom) {
  EXPECT_TRUE(window_->random_weights_note().isEmpty());
  EXPECT_FALSE(window_->windowTitle().contains("random weights"));
  const TimingModel tiny = tiny_timing_model();
  const QString path =
      QDir(cache_.path()).filePath("timing-models/servescope-random-test-tiny-q4_0.gguf");
  ASSERT_FALSE(QFileInfo::exists(path));

  window_->open_timing_model(tiny);
  ASSERT_TRUE(wait_until([&] { return window_->engine_info()->model_path == path; }))
      << (failure_ ? failure_->toStdString() : "");
  EXPECT_TRUE(QFileInfo::exists(path));
  EXPECT_FALSE(QFileInfo::exists(path + ".partial"));
  const EngineInfo& info = *window_->engine_info();
  EXPECT_TRUE(info.random_weights);
  EXPECT_EQ(info.n_layers, 2);
  const int64_t vocab =
      model::read_model_config(gguf::GgufFile::open(cli::default_model_path())).vocab_size;
  EXPECT_EQ(info.parameters, eval::parameter_count(tiny.shape, vocab));
  const QString note = QString::fromUtf8(model::kRandomWeightsNote.data());
  EXPECT_EQ(window_->random_weights_note(), note);
  EXPECT_TRUE(window_->windowTitle().contains(note)) << window_->windowTitle().toStdString();
  EXPECT_TRUE(window_->message().contains("quantisation lab does not run"))
      << window_->message().toStdString();

  generate_and_wait(6, 0);  // it serves as any model
  EXPECT_EQ(window_->generated_tokens().size(), 6);

  // Back to the bundled model the note goes; choosing the timing model again reuses its file.
  const QDateTime written = QFileInfo(path).lastModified();
  window_->open_model(QString::fromStdString(cli::default_model_path()));
  ASSERT_TRUE(wait_until([&] { return !window_->engine_info()->random_weights; }));
  EXPECT_TRUE(window_->random_weights_note().isEmpty());
  EXPECT_FALSE(window_->windowTitle().contains(note));
  window_->open_timing_model(tiny);
  ASSERT_TRUE(wait_until([&] { return window_->engine_info()->random_weights; }));
  EXPECT_EQ(QFileInfo(path).lastModified(), written);
  EXPECT_FALSE(failure_.has_value());
}

TEST_F(WindowFixture, TheModelPickerAndFileMenuOfferEveryTimingPreset) {
  auto* picker = window_->findChild<QComboBox*>("model-picker");
  ASSERT_NE(picker, nullptr);
  auto* menu = window_->findChild<QMenu*>("timing-models-menu");
  ASSERT_NE(menu, nullptr);
  const std::vector<TimingModel> presets = timing_model_presets();
  ASSERT_EQ(presets.size(), 2 * eval::random_model_presets().size());  // F32 and Q4_0 each
  ASSERT_EQ(menu->actions().size(), static_cast<qsizetype>(presets.size()));
  for (size_t i = 0; i < presets.size(); ++i) {
    const QString path = timing_model_path(window_->timing_folder(), presets[i]);
    EXPECT_TRUE(path.startsWith(QDir(cache_.path()).filePath("timing-models")));
    const int row = picker->findData(path);
    ASSERT_GE(row, 0) << path.toStdString();
    const QString title = QString("%1 %2").arg(presets[i].label, presets[i].type.toUpper());
    EXPECT_TRUE(picker->itemText(row).contains(title)) << picker->itemText(row).toStdString();
    EXPECT_TRUE(picker->itemData(row, Qt::ToolTipRole).toString().contains("memory wall"));
    EXPECT_TRUE(menu->actions()[static_cast<qsizetype>(i)]->text().remove('&').startsWith(title));
  }
}

TEST_F(WindowFixture, ATimingModelThatCannotBeWrittenLeavesThePreviousModelServing) {
  {  // a file where the timing-models folder should be: the folder cannot be made
    std::ofstream blocker(QDir(cache_.path()).filePath("timing-models").toStdString());
    blocker << "not a folder";
  }
  const QString previous = window_->engine_info()->model_path;
  window_->open_timing_model(tiny_timing_model());
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains("Could not write the timing model test-tiny Q4_0"))
      << failure_->toStdString();
  EXPECT_TRUE(failure_->contains("cannot create the folder")) << failure_->toStdString();
  EXPECT_TRUE(failure_->contains("Still serving")) << failure_->toStdString();
  EXPECT_EQ(window_->message(), *failure_);  // shown inside the window
  EXPECT_EQ(window_->engine_info()->model_path, previous);
  EXPECT_TRUE(window_->random_weights_note().isEmpty());

  generate_and_wait(8, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 8);
}

// A window that reads and writes the settings, on the CPU backend.
WindowOptions remembering_on_the_cpu() {
  WindowOptions options;
  options.remember_settings = true;
  options.backend = BackendChoice(compute::BackendKind::kCpu);
  return options;
}

// A 1280x720 projector: the window (Learn pane docked) held itself at least 1,367 px wide, by
// one unwrapped label and four 80 px buttons.
TEST(WindowLayout, TheWindowFitsA1280x720Screen) {
  testing::app();
  WindowOptions options;
  options.remember_settings = false;
  options.backend = BackendChoice(compute::BackendKind::kCpu);
  MainWindow window(options);
  window.show();
  window.resize(1280, 720);
  deliver_posted_events();  // laid out
  EXPECT_LE(window.minimumSizeHint().width(), 1280);
  EXPECT_LE(window.minimumSizeHint().height(), 720);
  EXPECT_EQ(window.width(), 1280);
}

// Killed with SIGTERM (a logout, `kill`), the window lost the learner's settings: it is closed
// as File > Quit closes it, and saves them.
TEST(WindowSettings, ATerminationSignalClosesTheWindowAndItsSettingsAreSaved) {
  QTemporaryDir dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  const WindowOptions options = remembering_on_the_cpu();
  struct sigaction before = {};
  sigaction(SIGTERM, nullptr, &before);
  {
    MainWindow first(options);
    first.show();
    ASSERT_TRUE(wait_until([&] { return first.engine_info().has_value(); }));
    auto* closer = new TerminationCloser(first);
    first.set_classmates(5);
    ASSERT_EQ(::raise(SIGTERM), 0);  // the process lives on: the handler only writes a byte
    EXPECT_TRUE(wait_until([&] { return !first.isVisible(); }, 10000));
    delete closer;
  }
  struct sigaction after = {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler) << "the previous handler came back";
  MainWindow second(options);
  EXPECT_EQ(second.classmates(), 5);
}

// Settings live in a folder of the test's own, never the user's.
TEST(WindowSettings, AreRememberedAcrossWindowsAndForgottenByReset) {
  QTemporaryDir dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  const WindowOptions options = remembering_on_the_cpu();
  {
    MainWindow first(options);
    ASSERT_TRUE(wait_until([&] { return first.engine_info().has_value(); }));
    first.set_classmates(7);
    first.set_dark_theme(true);
    first.set_prompt("Tom had a red ball");
    first.set_batching({true, 350});
    first.set_quantised_activations(true);
    ASSERT_TRUE(wait_until([&] { return first.engine_info()->quantised_activations; }));
    // The lab's limits as the learner sets them in the panel: KL off, a TPOT limit, a goal.
    auto* lab = first.findChild<widgets::QuantisationPanel*>();
    ASSERT_NE(lab, nullptr);
    lab->max_kl_enabled_control()->setChecked(false);
    lab->max_tpot_enabled_control()->setChecked(true);
    lab->max_tpot_control()->setValue(4.5);
    lab->min_speedup_control()->setValue(1.25);
    first.close();  // saves
  }
  {
    MainWindow second(options);
    EXPECT_EQ(second.classmates(), 7);
    EXPECT_TRUE(second.batching().static_batches);
    EXPECT_EQ(second.batching().wait_ms, 350);
    EXPECT_TRUE(second.quantised_activations());
    EXPECT_TRUE(second.dark_theme());
    EXPECT_EQ(second.prompt(), "Tom had a red ball");
    EXPECT_TRUE(std::isinf(second.quant_limits().max_kl));
    EXPECT_EQ(second.quant_limits().max_tpot_ms, 4.5);
    EXPECT_EQ(second.quant_limits().min_speedup, 1.25);
    auto* lab = second.findChild<widgets::QuantisationPanel*>();
    ASSERT_NE(lab, nullptr);
    second.show();
    second.show_panel(PanelId::kQuantisation);  // the panel shows what was remembered
    ASSERT_TRUE(wait_until([&] { return lab->limits().max_tpot_ms == 4.5; }));
    EXPECT_FALSE(lab->max_kl_enabled_control()->isChecked());
    ASSERT_TRUE(wait_until([&] { return second.engine_info().has_value(); }));
    EXPECT_EQ(second.engine_info()->backend, "cpu");
    EXPECT_TRUE(second.engine_info()->quantised_activations);  // the engine was built with them
    EXPECT_TRUE(second.engine_batching().static_batches);
  }
  MainWindow::forget_settings();
  {
    MainWindow third(options);
    EXPECT_EQ(third.classmates(), 0);
    EXPECT_FALSE(third.batching().static_batches);
    EXPECT_FALSE(third.quantised_activations());
    EXPECT_FALSE(third.dark_theme());
    EXPECT_EQ(third.prompt(), "Once upon a time");  // the suggested prompt again
    EXPECT_EQ(third.quant_limits().max_kl, default_lab_limits().max_kl);
    third.set_dark_theme(false);
  }
}

// --- every failure ends in a reply that leaves the window usable ------------------------------

QString long_prompt() {  // about 400 tokens: more than the bundled model's context of 256
  QString prompt;
  for (int i = 0; i < 100; ++i) prompt += "once upon a time ";
  return prompt;
}

TEST_F(WindowFixture, APromptLongerThanTheContextIsRefusedAndTheNextGenerateRuns) {
  window_->set_prompt(long_prompt());
  window_->generate();
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains("Cannot generate")) << failure_->toStdString();
  EXPECT_TRUE(failure_->contains("context holds")) << failure_->toStdString();
  EXPECT_EQ(window_->message(), *failure_);
  EXPECT_FALSE(window_->generating());

  window_->set_prompt("Once upon a time");
  generate_and_wait(6, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 6);
}

TEST_F(WindowFixture, AFailedLoadLeavesThePickersOnTheModelThatServes) {
  auto* models = window_->findChild<QComboBox*>("model-picker");
  auto* backends = window_->findChild<QComboBox*>("backend-picker");
  ASSERT_NE(models, nullptr);
  ASSERT_NE(backends, nullptr);
  const QString previous = window_->engine_info()->model_path;
  QTemporaryDir dir;
  const QString corrupt = dir.filePath("corrupt.gguf");
  std::ofstream(corrupt.toStdString(), std::ios::binary) << "GGUF" << std::string(64, '\x7f');
  window_->open_model(corrupt);
  EXPECT_TRUE(window_->loading());
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_FALSE(window_->loading());
  EXPECT_EQ(models->currentData().toString(), previous);
  EXPECT_EQ(backends->currentData().toInt(), -1);  // the CPU, which the engine runs on
  generate_and_wait(4, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 4);
}

// Issue 25 item 3: at the first Generate such a model's tokens had no text and the window
// aborted; it is refused at load with the counts, and the model in use keeps serving.
TEST_F(WindowFixture, AModelWhoseTokenizerListsFewerTokensThanItsEmbeddingIsRefusedAtLoad) {
  QTemporaryDir dir;
  const QString path = dir.filePath("short-tokenizer.gguf");
  testing_support::write_edited_copy(cli::default_model_path(), path.toStdString(),
                                     testing_support::fewer_tokens(10));
  const int64_t rows = window_->engine_info()->vocab_size;
  const QString previous = window_->engine_info()->model_path;
  window_->open_model(path);
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains(QString("its tokenizer lists %1 tokens but its embedding has "
                                         "%2 rows")
                                     .arg(rows - 10)
                                     .arg(rows)))
      << failure_->toStdString();
  EXPECT_TRUE(failure_->contains("Still serving")) << failure_->toStdString();
  EXPECT_EQ(window_->engine_info()->model_path, previous);
  generate_and_wait(8, 0);
  EXPECT_EQ(window_->generated_tokens().size(), 8);
}

// Issue 25 item 6: a remembered FIFO as model blocked the engine's thread in open() for ever:
// nothing loaded, no message, and the window never closed.
TEST(WindowStartup, ARememberedFifoIsRefusedTheWindowStaysUsableAndQuitsPromptly) {
  QTemporaryDir dir;
  const QString fifo = dir.filePath("model.gguf");
  ASSERT_EQ(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
  // Should the engine's thread block on it after all, a writer's open and close lets it go.
  const auto release_reader = [&] {
    const int fd = ::open(fifo.toLocal8Bit().constData(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  };
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.filePath("settings"));
  QSettings("ServeScope", "servescope").setValue("engine/model", fifo);
  const WindowOptions options = remembering_on_the_cpu();
  auto window = std::make_unique<MainWindow>(options);
  window->show();  // its message shows
  std::optional<QString> failure;
  QObject::connect(window.get(), &MainWindow::failed, window.get(),
                   [&](const QString& message) { failure = message; });
  const bool answered = wait_until([&] { return failure.has_value(); }, 30000);
  if (!answered) release_reader();
  ASSERT_TRUE(answered);
  EXPECT_TRUE(failure->contains("not a regular file")) << failure->toStdString();
  EXPECT_EQ(window->message(), *failure);
  EXPECT_FALSE(window->loading());
  EXPECT_FALSE(window->engine_info().has_value());
  // The pickers say nothing is loaded instead of naming the bundled model and the CPU.
  EXPECT_EQ(window->findChild<QComboBox*>("model-picker")->currentIndex(), -1);
  EXPECT_EQ(window->findChild<QComboBox*>("backend-picker")->currentIndex(), -1);

  failure.reset();
  window->generate();  // refused, and Generate is not left disabled
  ASSERT_TRUE(wait_until([&] { return failure.has_value(); }));
  EXPECT_TRUE(failure->contains("No model is loaded")) << failure->toStdString();
  EXPECT_FALSE(window->generating());

  window->open_model(QString::fromStdString(cli::default_model_path()));
  ASSERT_TRUE(wait_until([&] { return window->engine_info().has_value(); }));
  std::optional<GenerationEnd> finished;
  QObject::connect(window.get(), &MainWindow::generation_finished, window.get(),
                   [&](GenerationEnd end) { finished = end; });
  window->set_max_tokens(4);
  window->generate();
  ASSERT_TRUE(wait_until([&] { return finished.has_value(); }));
  EXPECT_EQ(*finished, GenerationEnd::kMaxTokens);

  QElapsedTimer quitting;
  quitting.start();
  window->close();
  window.reset();
  EXPECT_LT(quitting.elapsed(), 5000);
}

// Issue 25 item 7: font_size=1000 gave a giant window of 3 GB.
TEST(WindowSettings, ARememberedFontSizeKeepsToTheMenusRange) {
  QTemporaryDir dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  const QFont before = QApplication::font();
  const WindowOptions options = remembering_on_the_cpu();
  for (const auto& [remembered, shown] :
       {std::pair{1000.0, MainWindow::kMaxFontPoints}, std::pair{1.0, MainWindow::kMinFontPoints},
        std::pair{12.0, 12.0}}) {
    QSettings("ServeScope", "servescope").setValue("view/font_size", remembered);
    MainWindow window(options);
    EXPECT_EQ(QApplication::font().pointSizeF(), shown) << remembered;
    QApplication::setFont(before);
  }
}

// Issue 25 item 10: a folder where the settings file belongs lost every setting in silence.
TEST(WindowSettings, ASettingsPathThatIsAFolderIsReportedInTheWindow) {
  QTemporaryDir dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  const QString file = QSettings("ServeScope", "servescope").fileName();
  ASSERT_TRUE(QDir().mkpath(file));
  const WindowOptions options = remembering_on_the_cpu();
  MainWindow window(options);
  window.show();
  EXPECT_TRUE(window.message().contains(file)) << window.message().toStdString();
  EXPECT_TRUE(window.message().contains("is a folder")) << window.message().toStdString();
  ASSERT_TRUE(wait_until([&] { return window.engine_info().has_value(); }));
  EXPECT_TRUE(window.message().contains("is a folder"));  // still there once the model loaded
}

}  // namespace
}  // namespace servescope::gui
