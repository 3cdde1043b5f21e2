// The controller: the real engine on a test model, driven through EngineWorker on its own
// thread exactly as the window drives it, with the GUI thread draining the telemetry queue into
// a TelemetryFolder. What the folder received must be exactly what the engine did: its step
// count, every request finished, and the KV pool rebuilt from the events equal, block by block,
// to the engine's own block table snapshot.
#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QObject>
#include <QTemporaryDir>
#include <QThread>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "app/gui/engine_bridge/engine_worker.h"
#include "app/gui/panels/telemetry_folder.h"
#include "engine/compute/devices.h"
#include "engine/gguf/gguf_file.h"
#include "engine/telemetry/metrics.h"
#include "tests/app/gui_test_support.h"
#include "tests/support/gguf_copy.h"
#include "tests/support/sanitizers.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::kTestData;
using testing::wait_until;

class WorkerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    EngineWorker::register_types();
    worker_ = new EngineWorker;
    worker_->moveToThread(&thread_);
    QObject::connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    QObject::connect(worker_, &EngineWorker::engine_ready, &receiver_,
                     [this](const EngineInfo& info) { info_ = info; });
    QObject::connect(worker_, &EngineWorker::failed, &receiver_,
                     [this](const QString& message) { failure_ = message; });
    QObject::connect(worker_, &EngineWorker::load_failed, &receiver_,
                     [this](const QString& message, bool) { failure_ = message; });
    QObject::connect(worker_, &EngineWorker::generation_refused, &receiver_,
                     [this](const QString& message) { failure_ = message; });
    QObject::connect(worker_, &EngineWorker::generation_finished, &receiver_,
                     [this](GenerationEnd end) { finished_ = end; });
    QObject::connect(worker_, &EngineWorker::notice, &receiver_,
                     [this](const QString& message) { notice_ = message; });
    QObject::connect(worker_, &EngineWorker::idle, &receiver_,
                     [this](const EngineCounters& counters) { idle_ = counters; });
    thread_.start();
  }

  void TearDown() override {
    QMetaObject::invokeMethod(worker_, &EngineWorker::shutdown, Qt::BlockingQueuedConnection);
    thread_.quit();
    thread_.wait();
  }

  template <typename F>
  void on_worker(F f) {
    QMetaObject::invokeMethod(worker_, [w = worker_, f] { f(*w); });
  }

  void load(const std::string& path, compute::BackendKind backend = compute::BackendKind::kCpu) {
    on_worker([path, backend](EngineWorker& w) {
      w.load_model(QString::fromStdString(path), BackendChoice(backend));
    });
    ASSERT_TRUE(wait_until([&] { return info_.has_value() || failure_.has_value(); }));
    ASSERT_TRUE(info_.has_value()) << failure_->toStdString();
  }

  // Drains everything the engine reported into the folder.
  void drain_into(TelemetryFolder& folder) { folder.fold(info_->telemetry->drain(), 0.0); }

  // The user's prompt with `classmates` beside it, `max_tokens` each, folded into a fresh
  // `folder` until the engine falls idle.
  void class_generates(TelemetryFolder& folder, int classmates, int max_tokens) {
    folder.reset({info_->kv_blocks, info_->block_size, info_->kv_bytes_per_block});
    on_worker([classmates, max_tokens](EngineWorker& w) {
      w.set_classmates(classmates);
      w.set_max_tokens(max_tokens);
      w.generate("Once upon a time");
    });
    ASSERT_NO_FATAL_FAILURE(drain_until_idle(folder));
  }

  // Drains while the generation runs, as the frame timer does, until the engine falls idle.
  void drain_until_idle(TelemetryFolder& folder) {
    ASSERT_TRUE(wait_until([&] {
      drain_into(folder);
      return finished_.has_value() && idle_.has_value();
    }));
    drain_into(folder);
    ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
  }

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  QObject receiver_;
  std::optional<EngineInfo> info_;
  std::optional<QString> failure_;
  std::optional<GenerationEnd> finished_;
  std::optional<QString> notice_;
  std::optional<EngineCounters> idle_;
};

TEST_F(WorkerFixture, FolderReceivesExactlyTheStepsRequestsAndKvEventsTheEngineMade) {
  load(kTestData + "/models/llama-f32.gguf");
  TelemetryFolder folder;
  ASSERT_NO_FATAL_FAILURE(class_generates(folder, 2, 20));
  const EngineCounters& engine = *idle_;

  EXPECT_GT(engine.steps_run, 0);
  EXPECT_EQ(folder.counts().steps, engine.steps_run);
  EXPECT_GE(engine.requests_submitted, 3);  // the user's request and at least two classmates
  EXPECT_EQ(engine.requests_finished, engine.requests_submitted);
  EXPECT_EQ(folder.counts().requests, engine.requests_finished);
  // Every request took blocks once and gave them back once (no preemption fits this load).
  const auto kinds = folder.counts().kv_events_by_kind;
  EXPECT_EQ(kinds[static_cast<size_t>(telemetry::KvEventKind::kAllocate)],
            engine.requests_submitted);
  EXPECT_EQ(kinds[static_cast<size_t>(telemetry::KvEventKind::kFree)], engine.requests_finished);
  EXPECT_EQ(folder.counts().inconsistent_kv_events, 0);
  EXPECT_EQ(folder.counts().prefill_tokens + folder.counts().decode_tokens, [&] {
    int64_t tokens = 0;
    for (const auto& s : folder.steps()) tokens += s.tokens();
    return tokens;
  }());

  // The pool rebuilt from the events is the engine's, block by block.
  ASSERT_EQ(folder.blocks().size(), engine.kv.blocks.size());
  EXPECT_EQ(folder.blocks_used(), engine.kv_blocks_used);
  for (size_t b = 0; b < engine.kv.blocks.size(); ++b) {
    EXPECT_EQ(folder.blocks()[b].ref_count, engine.kv.blocks[b].ref_count) << "block " << b;
    EXPECT_EQ(folder.blocks()[b].fill, engine.kv.blocks[b].fill) << "block " << b;
    EXPECT_EQ(folder.blocks()[b].cached_prefix, engine.kv.blocks[b].cached_prefix) << "block " << b;
  }

  // The user's tokens arrived with their probabilities, and they are the request's output.
  const int64_t user = folder.watched_request();
  const telemetry::RequestRecord* record = nullptr;
  for (const auto& r : folder.requests()) {
    if (r.request_id == user) record = &r;
  }
  ASSERT_NE(record, nullptr);
  ASSERT_EQ(folder.watched_tokens().size(), record->output_ids.size());
  for (size_t i = 0; i < record->output_ids.size(); ++i) {
    const telemetry::TokenRecord& t = folder.watched_tokens()[i];
    EXPECT_EQ(t.id, record->output_ids[i]);
    EXPECT_GT(t.prob, 0.0);
    EXPECT_LE(t.prob, 1.0);
    ASSERT_EQ(t.top.size(), 5u);
    EXPECT_GE(t.top.front().prob, t.prob);  // the most likely is at least as likely
  }
}

// Lesson 3's class cycles the pool: once every never-cached block is in use, a new block is
// taken from the cached prefixes, and its kEvict comes before the block's kAllocate or
// kAppend. Every event's occupancy must be the one its replay gives (23 evictions a run of the
// lesson disagreed by the blocks already taken).
TEST_F(WorkerFixture, EvictionsWhileTheClassCyclesThePoolReportTheReplayedOccupancy) {
  load(kTestData + "/models/llama-f32.gguf");
  TelemetryFolder folder;
  ASSERT_NO_FATAL_FAILURE(class_generates(folder, 16, 120));
  const auto kinds = folder.counts().kv_events_by_kind;
  ASSERT_GT(kinds[static_cast<size_t>(telemetry::KvEventKind::kEvict)], 0)
      << "the run must evict cached prefixes to test them";
  EXPECT_EQ(folder.counts().inconsistent_kv_events, 0);
  EXPECT_EQ(folder.blocks_used(), idle_->kv_blocks_used);
}

// README: each roof is "kept highest across probes, raised to any measured step that beat it".
// A roof the window showed raised by a step stays raised when the engine is rebuilt (another
// KV type) or the model reloaded (back to the file's weights) on the same device.
TEST_F(WorkerFixture, RoofsRaisedByAStepSurviveRebuildingTheEngine) {
  QTemporaryDir cache;
  const testing::ScopedCacheHome cache_home(cache.path());
  testing::cache_roofs_every_step_beats();
  load(kTestData + "/models/llama-f32.gguf");
  ASSERT_DOUBLE_EQ(info_->roofs.memory_gb_per_s, 1e-6);
  TelemetryFolder folder;
  folder.reset({info_->kv_blocks, info_->block_size, info_->kv_bytes_per_block});
  on_worker([](EngineWorker& w) {
    w.set_max_tokens(8);
    w.generate("Once upon a time");
  });
  ASSERT_NO_FATAL_FAILURE(drain_until_idle(folder));
  // What the roofline showed: the probe's roofs raised by this run's steps.
  const compute::StepRoofs shown = roofs_under_steps(info_->roofs, folder.steps());
  ASSERT_TRUE(shown.memory_raised && shown.compute_raised);

  const auto expect_kept = [&](const char* after) {
    EXPECT_GE(info_->roofs.memory_gb_per_s, shown.memory_gb_per_s) << after;
    EXPECT_GE(info_->roofs.compute_gflop_per_s, shown.compute_gflop_per_s) << after;
    EXPECT_TRUE(info_->roofs.memory_raised) << after;
    EXPECT_TRUE(info_->roofs.compute_raised) << after;
    EXPECT_NE(info_->roofs.memory_raised_by.find("llama-f32.gguf"), std::string::npos) << after;
  };
  info_.reset();
  on_worker([](EngineWorker& w) { w.set_kv_type(gguf::GgmlType::F32); });
  ASSERT_TRUE(wait_until([&] { return info_.has_value(); }));
  expect_kept("another KV type");
  info_.reset();
  load(kTestData + "/models/llama-f32.gguf");
  expect_kept("the model reloaded");
}

TEST_F(WorkerFixture, SlowMotionLeavesTtftAndTpotAtTheStepsOwnTimes) {
  // Slow motion waits 400 ms between steps; the request's times must not contain the waits
  // (TTFT 416 ms and TPOT 400 ms, before: continuous batching looked slower than static).
  load(kTestData + "/models/llama-f32.gguf");
  TelemetryFolder folder;
  folder.reset({info_->kv_blocks, info_->block_size, info_->kv_bytes_per_block});
  on_worker([](EngineWorker& w) {
    w.set_speed(Speed::kSlowMotion);
    w.set_max_tokens(4);
    w.generate("Once upon a time");
  });
  ASSERT_NO_FATAL_FAILURE(drain_until_idle(folder));
  ASSERT_EQ(folder.requests().size(), 1u);
  const telemetry::RequestRecord& r = folder.requests().front();
  ASSERT_EQ(telemetry::output_tokens(r), 4);
  EXPECT_LT(telemetry::time_to_first_token_ms(r), EngineWorker::kSlowMotionMs / 4.0);
  EXPECT_LT(telemetry::time_per_output_token_ms(r), EngineWorker::kSlowMotionMs / 4.0);
  // The time between its steps is what is left: small, not the pause.
  const telemetry::TpotBreakdown b = telemetry::tpot_breakdown(r, folder.steps());
  EXPECT_EQ(b.steps, 3);
  EXPECT_LT(b.gap_ms, EngineWorker::kSlowMotionMs / 4.0);
}

TEST(BatchSweepPoint, KeepsTheMedianRunWhoseThroughputIsItsTokensOverItsTime) {
  // Three runs of one size, the noisy one first: the middle one by step time is kept whole.
  const std::vector<telemetry::StepTotals> runs = {
      {.steps = 64, .tokens = 512, .step_ms = 320.0},   // 5.0 ms per step: a busy spell
      {.steps = 64, .tokens = 500, .step_ms = 160.0},   // 2.5 ms
      {.steps = 62, .tokens = 496, .step_ms = 173.6}};  // 2.8 ms
  const std::optional<BatchSweepPoint> p = median_sweep_point(8, runs);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->max_batch, 8);
  EXPECT_EQ(p->decode.tokens, 496);
  EXPECT_DOUBLE_EQ(p->decode_step_ms(), 2.8);
  EXPECT_EQ(p->tokens_per_s(), 496.0 / (173.6 / 1000.0));  // exactly its tokens over its time
  EXPECT_DOUBLE_EQ(p->tokens_per_s() * p->decode_step_ms() / 1000.0, p->tokens_per_step());
  EXPECT_DOUBLE_EQ(p->fastest_step_ms, 2.5);
  EXPECT_DOUBLE_EQ(p->slowest_step_ms, 5.0);
  EXPECT_FALSE(median_sweep_point(8, {}).has_value());
}

// The plan's order: an untimed batch 1, then up, down, up; each size's point once its third
// run is in, made of those three runs (the median by step time).
TEST(BatchSweepPlan, RunsAnUntimedOneThenAlternatingPassesAndGivesEachSizeAfterItsLastRun) {
  BatchSweepPlan plan;
  std::vector<int64_t> order;
  std::vector<int64_t> points_after;  // the run number each point came with
  int run = 0;
  while (const std::optional<int64_t> batch = plan.next_batch()) {
    order.push_back(*batch);
    // Step time grows with the run number, so the median of a size's runs is its second.
    const telemetry::StepTotals totals{.steps = 10, .tokens = 10 * *batch, .step_ms = 10.0 + run};
    if (const std::optional<BatchSweepPoint> point = plan.record(totals)) {
      EXPECT_EQ(point->max_batch, *batch);
      points_after.push_back(run);
    }
    ++run;
  }
  const std::vector<int64_t> expected = {1, 1, 2, 4, 8, 16, 16, 8, 4, 2, 1, 1, 2, 4, 8, 16};
  EXPECT_EQ(order, expected);
  EXPECT_EQ(points_after, (std::vector<int64_t>{11, 12, 13, 14, 15}));
  ASSERT_EQ(plan.points().size(), kBatchSweepSizes);
  // Batch 1 ran (timed) as runs 1, 10 and 11: the median is run 10's.
  EXPECT_DOUBLE_EQ(plan.points().front().decode.step_ms, 20.0);
  EXPECT_DOUBLE_EQ(plan.points().front().fastest_step_ms, 11.0 / 10);
  EXPECT_FALSE(plan.record({}).has_value());  // nothing more once complete
}

// The sweep runs one engine step per event-loop turn: a command sent while it runs is
// answered before the sweep ends, not after it (the thread is never held for a whole sweep).
TEST_F(WorkerFixture, TheThreadAnswersCommandsWhileASweepRuns) {
  load(kTestData + "/models/llama-f32.gguf");
  std::optional<QVector<BatchSweepPoint>> sweep;
  int points = 0;
  QObject::connect(worker_, &EngineWorker::batch_sweep_point, &receiver_,
                   [&](const BatchSweepPoint&) { ++points; });
  QObject::connect(worker_, &EngineWorker::batch_sweep_ready, &receiver_,
                   [&](const QVector<BatchSweepPoint>& p) { sweep = p; });
  on_worker([](EngineWorker& w) { w.run_batch_sweep(); });
  bool answered_while_sweeping = false;
  QMetaObject::invokeMethod(
      worker_,
      [w = worker_, &answered_while_sweeping] {
        w->set_speed(Speed::kRealTime);
        answered_while_sweeping = true;
      },
      Qt::BlockingQueuedConnection);
  EXPECT_TRUE(answered_while_sweeping);
  QCoreApplication::processEvents();
  EXPECT_FALSE(sweep.has_value()) << "the command waited for the whole sweep";
  ASSERT_TRUE(wait_until([&] { return sweep.has_value(); }));
  ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
  EXPECT_EQ(sweep->size(), kBatchSweepSizes);
  EXPECT_EQ(points, kBatchSweepSizes);
}

// A new engine (here a new KV type) ends a sweep measured on the old one; the live engine
// then serves a generation as before.
TEST_F(WorkerFixture, ANewEngineEndsTheSweepAndTheLiveEngineGoesOn) {
  load(kTestData + "/models/llama-f32.gguf");
  std::optional<QVector<BatchSweepPoint>> sweep;
  QObject::connect(worker_, &EngineWorker::batch_sweep_ready, &receiver_,
                   [&](const QVector<BatchSweepPoint>& p) { sweep = p; });
  info_.reset();
  on_worker([](EngineWorker& w) { w.run_batch_sweep(); });
  on_worker([](EngineWorker& w) { w.set_kv_type(gguf::GgmlType::F32); });
  ASSERT_TRUE(wait_until([&] { return sweep.has_value() && info_.has_value(); }));
  EXPECT_LT(sweep->size(), kBatchSweepSizes);
  TelemetryFolder folder;
  ASSERT_NO_FATAL_FAILURE(class_generates(folder, 0, 8));
  EXPECT_EQ(finished_, GenerationEnd::kMaxTokens);
}

// The tooltip's description is made from the workload the sweep runs, not written beside it.
TEST(BatchSweep, TheWorkloadTextDescribesTheWorkloadItRuns) {
  const serving::WorkloadSpec spec = batch_sweep_workload(4, {5, 6, 7}, 100);
  EXPECT_EQ(spec.clients, 8);
  EXPECT_EQ(spec.text_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(batch_sweep_workload_text().toStdString(),
            "2 requests per slot, prompts of 16-32 tokens, up to 32 output tokens each, greedy, on "
            "a fresh engine after one untimed run");
}

TEST_F(WorkerFixture, AStaticBatchRunsWhenItsWaitEndsWithOneTimerNotABusyLoop) {
  load(kTestData + "/models/llama-f32.gguf");
  constexpr int kWaitMs = 150;
  std::vector<BatchCollecting> reports;
  std::optional<BatchingChoice> batching;
  QObject::connect(worker_, &EngineWorker::batch_collecting, &receiver_,
                   [&](const BatchCollecting& state) { reports.push_back(state); });
  QObject::connect(worker_, &EngineWorker::batching_changed, &receiver_,
                   [&](const BatchingChoice& b) { batching = b; });
  TelemetryFolder folder;
  folder.reset({info_->kv_blocks, info_->block_size, info_->kv_bytes_per_block});
  on_worker([](EngineWorker& w) {
    w.set_batching({true, kWaitMs});
    w.set_classmates(2);
    w.set_max_tokens(5);
    w.generate("Once upon a time");
  });
  ASSERT_NO_FATAL_FAILURE(drain_until_idle(folder));
  // The engine holds the policy the worker was given.
  ASSERT_TRUE(batching.has_value());
  EXPECT_TRUE(batching->static_batches);
  EXPECT_EQ(batching->wait_ms, kWaitMs);

  // The batch of three (the user and two classmates, of 16 places) was reported collecting,
  // then reported done. A busy loop would report on every turn of the loop; the worker arms
  // one timer for the due time (and re-arms only when it wakes early).
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.front().waiting, 3);
  EXPECT_EQ(reports.front().batch_size, info_->max_batch_size);
  EXPECT_GT(reports.front().due_in_ms, 0.0);
  EXPECT_LE(reports.front().due_in_ms, kWaitMs);
  EXPECT_EQ(reports.back().waiting, 0);
  EXPECT_LE(reports.size(), 4u);

  // Nobody ran before the batch was released, and then all three started in the same step.
  ASSERT_FALSE(folder.steps().empty());
  EXPECT_EQ(folder.steps().front().batch.size(), 3u);
  EXPECT_EQ(folder.counts().steps, idle_->steps_run);
  // The oldest request (the user's) waited the whole wait before its first token.
  ASSERT_FALSE(folder.requests().empty());
  const auto oldest =
      std::min_element(folder.requests().begin(), folder.requests().end(),
                       [](const auto& a, const auto& b) { return a.arrival_ms < b.arrival_ms; });
  EXPECT_GE(oldest->first_scheduled_ms - oldest->arrival_ms, kWaitMs);
  EXPECT_GE(telemetry::time_to_first_token_ms(*oldest), kWaitMs);
}

// The model's tooltip lines: what the file's general.* keys say, and only that.
TEST_F(WorkerFixture, ProvenanceSaysWhatTheFileSays) {
  const std::string bundled = kTestData + "/../../assets/models/servescope-stories.gguf";
  const auto file = gguf::GgufFile::open(bundled);
  load(bundled);
  EXPECT_TRUE(info_->provenance.contains(
      "Licence: " + QString::fromStdString(file.find("general.license")->as_string())));
  EXPECT_TRUE(info_->provenance.contains("Chat template: none"));
  EXPECT_FALSE(info_->provenance.contains("Author:"));  // the file names none
}

TEST_F(WorkerFixture, StopCancelsTheUserAndTheClassmates) {
  load(kTestData + "/models/llama-f32.gguf");
  on_worker([](EngineWorker& w) {
    w.set_speed(Speed::kSingleStep);  // nothing runs until asked, so Stop meets live requests
    w.set_classmates(3);
    w.set_max_tokens(50);
    w.generate("Once upon a time");
    w.step_once();
    w.stop();
  });
  ASSERT_TRUE(wait_until([&] { return finished_.has_value() && idle_.has_value(); }));
  EXPECT_EQ(*finished_, GenerationEnd::kStopped);
  EXPECT_EQ(idle_->requests_finished, idle_->requests_submitted);
  EXPECT_EQ(idle_->steps_run, 1);
  EXPECT_EQ(idle_->kv_blocks_used, 0);  // every block given back at once
}

TEST_F(WorkerFixture, APromptLongerThanTheContextIsRefusedWithAReason) {
  load(kTestData + "/models/llama-f32.gguf");
  QString prompt;
  for (int i = 0; i < 200; ++i) prompt += "once upon a time ";
  on_worker([prompt](EngineWorker& w) { w.generate(prompt); });
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains("context")) << failure_->toStdString();
  EXPECT_FALSE(finished_.has_value());
}

// The window's KV budget sizes the pool of a model that declares a 128k context: automatic is
// 128 blocks (not 16 slots x 128k tokens), 1 MiB buys 256 blocks of the test model's F16 keys
// and values, and a prompt that budget cannot hold is refused naming the setting.
TEST_F(WorkerFixture, TheKvBudgetSizesThePoolAndAPromptItCannotHoldNamesIt) {
  const std::string path = ::testing::TempDir() + "/long_context_worker." +
                           std::to_string(QCoreApplication::applicationPid()) + ".gguf";
  servescope::testing_support::write_gguf_copy(kTestData + "/models/llama-f32.gguf",
                                               {{"llama.context_length", gguf::Value::u32(131072)}},
                                               path);
  load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(info_->kv_blocks, 128);
  info_.reset();
  on_worker([](EngineWorker& w) { w.set_kv_budget_mib(1); });
  ASSERT_TRUE(wait_until([&] { return info_.has_value(); }));
  EXPECT_EQ(info_->kv_blocks, 256);
  EXPECT_EQ(info_->kv_bytes_total, uint64_t{1} << 20);

  QString prompt;
  for (int i = 0; i < 1200; ++i) prompt += "once upon a time ";
  on_worker([prompt](EngineWorker& w) { w.generate(prompt); });
  ASSERT_TRUE(wait_until([&] { return failure_.has_value(); }));
  EXPECT_TRUE(failure_->contains("the KV budget of 1.0 MiB holds 4096 tokens; raise the KV budget"))
      << failure_->toStdString();
}

TEST_F(WorkerFixture, QuantisedWeightsReplaceTheModelOnlyWhenReady) {
  load(kTestData + "/models/llama-f32.gguf");
  const uint64_t f32_bytes = info_->weight_bytes;
  info_.reset();
  int last_done = 0, total = 0;
  QObject::connect(worker_, &EngineWorker::weight_progress, &receiver_,
                   [&](int done, int of, const QString&) { last_done = done, total = of; });
  on_worker([](EngineWorker& w) { w.set_weight_type("q8_0"); });
  ASSERT_TRUE(wait_until([&] { return info_.has_value() || failure_.has_value(); }));
  ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
  EXPECT_EQ(info_->weight_type, "q8_0");
  EXPECT_GT(total, 0);
  EXPECT_EQ(last_done, total);  // every tensor reported before the model was swapped
  // Q8_0 stores 34 bytes per 32 weights: the matrices shrink to about a quarter of F32.
  EXPECT_LT(info_->weight_bytes, f32_bytes / 2);
  on_worker([](EngineWorker& w) {
    w.set_max_tokens(10);
    w.generate("Once upon a time");
  });
  ASSERT_TRUE(wait_until([&] { return finished_.has_value(); }));
  EXPECT_EQ(*finished_, GenerationEnd::kMaxTokens);
}

TEST_F(WorkerFixture, ALostVulkanDeviceMovesTheEngineToTheCpuAndSaysSo) {
  if (compute::list_devices().vulkan.empty()) GTEST_SKIP() << "no Vulkan device here";
  load(kTestData + "/models/llama-f32.gguf", compute::BackendKind::kVulkan);
  ASSERT_EQ(info_->backend, "vulkan");
  info_.reset();
  on_worker([](EngineWorker& w) {
    w.simulate_device_loss_after(2);
    w.set_max_tokens(20);
    w.generate("Once upon a time");
  });
  ASSERT_TRUE(wait_until([&] { return notice_.has_value() && info_.has_value(); }));
  EXPECT_TRUE(notice_->contains("CPU")) << notice_->toStdString();
  EXPECT_EQ(info_->backend, "cpu");  // rebuilt on the CPU with the same model
  EXPECT_EQ(*finished_, GenerationEnd::kFailed);

  finished_.reset();
  on_worker([](EngineWorker& w) { w.generate("Once upon a time"); });
  ASSERT_TRUE(wait_until([&] { return finished_.has_value(); }));
  EXPECT_EQ(*finished_, GenerationEnd::kMaxTokens);
}

// The sweep's batch 1 is the lesson's live request alone on the same model and engine config:
// a decode step of one sequence either way. A tester saw the sweep chart's batch 1 at twice
// the live time per token; measured in one process, alternating, the two must agree within
// 1.5x either way (medians of three, so a busy spell of a shared machine moves both).
TEST_F(WorkerFixture, TheSweepsBatchOneStepTakesAsLongAsALiveBatchOneDecodeStep) {
  if (testing_support::kAddressSanitizer) {
    // Two minutes of instrumented sweeps, run alone, for a comparison of speeds: the optimised
    // build makes it; the paths it takes are the sweep and generation tests' too.
    GTEST_SKIP() << "a speed comparison: the optimised build asserts it";
  }
  load(kTestData + "/../../assets/models/servescope-stories.gguf");
  std::optional<QVector<BatchSweepPoint>> sweep;
  QObject::connect(worker_, &EngineWorker::batch_sweep_ready, &receiver_,
                   [&](const QVector<BatchSweepPoint>& points) { sweep = points; });
  on_worker([](EngineWorker& w) {
    w.set_classmates(0);
    w.set_max_tokens(100);
    w.set_sampling(serving::SamplingParams{});  // greedy, as the lesson's request
  });
  std::vector<double> live_ms;
  std::vector<double> sweep_ms;
  for (int run = 0; run < 3; ++run) {
    TelemetryFolder folder;
    folder.reset({info_->kv_blocks, info_->block_size, info_->kv_bytes_per_block});
    finished_.reset();
    idle_.reset();
    on_worker([](EngineWorker& w) { w.generate("Once upon a time"); });
    // Drained once at the end, not while it runs: this thread's folding competed with the
    // live steps for a busy machine's cores, and the sweep's steps had no such neighbour.
    ASSERT_TRUE(wait_until([&] { return finished_.has_value() && idle_.has_value(); }));
    drain_into(folder);
    ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
    const telemetry::StepTotals live = telemetry::decode_step_totals(folder.steps());
    ASSERT_GT(live.steps, 50);
    live_ms.push_back(telemetry::mean_step_time_ms(live));

    sweep.reset();
    on_worker([](EngineWorker& w) { w.run_batch_sweep(); });
    ASSERT_TRUE(wait_until([&] { return sweep.has_value(); }));
    ASSERT_FALSE(failure_.has_value()) << failure_->toStdString();
    ASSERT_FALSE(sweep->isEmpty());
    ASSERT_EQ(sweep->front().max_batch, 1);
    sweep_ms.push_back(sweep->front().decode_step_ms());
  }
  const double live = telemetry::percentile(live_ms, 50.0);
  const double swept = telemetry::percentile(sweep_ms, 50.0);
  const std::string runs = "live " + std::to_string(live) + " ms, sweep " + std::to_string(swept) +
                           " ms (medians of three)";
  EXPECT_LT(swept, 1.5 * live) << runs;
  EXPECT_LT(live, 1.5 * swept) << runs;
}

}  // namespace
}  // namespace servescope::gui
