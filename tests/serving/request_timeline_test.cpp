// Each request's life rebuilt from a real engine's records, against the engine's own record of
// that request: the stretches meet end to start and add up to arrival..finished, the queued one
// is the queue time, every prompt token is in a prefill chunk, every preemption is a preempted
// stretch followed by a recompute; and static batching shows head-of-line blocking as a long
// queued stretch that continuous batching does not have.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/observer.h"
#include "engine/telemetry/request_timeline.h"

namespace servescope::serving {
namespace {

using telemetry::LifeStage;
using telemetry::LifeStretch;
using telemetry::RequestLife;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

// Feeds a timeline as the engine emits, and keeps the engine's request records to check it by.
class TimelineTap final : public telemetry::Observer {
 public:
  void on_step(const telemetry::StepRecord& step) override { timeline.on_step(step); }
  void on_request(const telemetry::RequestRecord& request) override {
    timeline.on_request(request);
    requests.push_back(request);
  }
  void on_kv_event(const telemetry::KvEvent& event) override {
    if (event.kind != telemetry::KvEventKind::kFork) return;
    timeline.on_fork(event.sequence, event.time_ms);
    forked.insert(event.sequence);
  }
  void on_arrival(const telemetry::RequestArrival& arrival) override {
    timeline.on_arrival(arrival);
  }

  telemetry::RequestTimeline timeline{100000};
  std::vector<telemetry::RequestRecord> requests;
  std::set<int64_t> forked;  // samples that shared their prompt's blocks
};

std::map<int64_t, RequestLife> by_id(const std::vector<const RequestLife*>& lives) {
  std::map<int64_t, RequestLife> out;
  for (const RequestLife* l : lives) out.emplace(l->request_id, *l);
  return out;
}

int64_t count_stage(const RequestLife& life, LifeStage stage) {
  int64_t n = 0;
  for (const LifeStretch& s : life.stretches) n += s.stage == stage ? 1 : 0;
  return n;
}

int64_t tokens_in(const RequestLife& life, LifeStage stage) {
  int64_t n = 0;
  for (const LifeStretch& s : life.stretches) n += s.stage == stage ? s.tokens : 0;
  return n;
}

class RequestTimelineTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static Engine engine(const EngineConfig& config, TimelineTap& tap) {
    return Engine(*model_->transformer, model::summarize_weights(model_->file).bytes, config,
                  &tap);
  }
  static std::vector<int32_t> prompt(std::mt19937& rng, int64_t n) {
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(model_->config.vocab_size - 1));
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(id(rng));
    return ids;
  }

  static model::Model* model_;
};

model::Model* RequestTimelineTest::model_ = nullptr;

// Random arrivals into a pool too small for them all (preemptions), a token budget that splits
// long prompts into chunks, a cancel now and then (some while still queued), and now and then
// samples sharing a prompt (a sample that joins the batch at once never prefills: its prompt
// counts as cached).
TEST_F(RequestTimelineTest, StretchesAddUpToEachRequestsRecordedTimes) {
  TimelineTap tap;
  Engine e = engine({.max_batch_size = 4,
                     .token_budget = 12,
                     .kv_type = gguf::GgmlType::F32,
                     .block_size = 4,
                     .kv_blocks = 14},
                    tap);
  std::mt19937 rng(21);
  std::map<int64_t, bool> cancelled;
  int64_t forks = 0;
  std::set<int64_t> later_samples;
  for (int submitted = 0; submitted < 24 || e.has_unfinished();) {
    for (int n = std::uniform_int_distribution<int>(0, 2)(rng); n > 0 && submitted < 24; --n) {
      EngineRequest r;
      r.prompt_ids = prompt(rng, std::uniform_int_distribution<int64_t>(2, 30)(rng));
      r.max_tokens = std::uniform_int_distribution<int64_t>(1, 14)(rng);
      const std::vector<SequenceId> ids = e.submit_samples(r, submitted % 5 == 2 ? 3 : 1);
      const SequenceId id = ids.front();
      forks += static_cast<int64_t>(ids.size()) - 1;
      later_samples.insert(ids.begin() + 1, ids.end());
      ++submitted;
      if (submitted % 7 == 0) {  // cancelled before any step, with any samples of its prompt
        cancelled[id] = e.cancel(id);
        for (size_t k = 1; k < ids.size(); ++k) cancelled[ids[k]] = true;
      }
    }
    if (e.has_unfinished()) e.step();
  }

  const std::map<int64_t, RequestLife> lives = by_id(tap.timeline.lives());
  ASSERT_EQ(lives.size(), tap.requests.size());
  int64_t preemptions = 0, chunked_prompts = 0;
  for (const telemetry::RequestRecord& r : tap.requests) {
    SCOPED_TRACE("request " + std::to_string(r.request_id));
    const RequestLife& life = lives.at(r.request_id);
    ASSERT_TRUE(life.finished);
    ASSERT_TRUE(life.arrival_known);
    ASSERT_FALSE(life.stretches.empty());
    EXPECT_EQ(life.stretches.front().stage, LifeStage::kQueued);
    EXPECT_DOUBLE_EQ(life.stretches.front().start_ms, r.arrival_ms);
    EXPECT_DOUBLE_EQ(life.stretches.back().end_ms, r.finished_ms);
    double total_ms = 0.0;
    for (size_t i = 0; i < life.stretches.size(); ++i) {
      const LifeStretch& s = life.stretches[i];
      EXPECT_LE(s.start_ms, s.end_ms);
      if (i > 0) {
        EXPECT_DOUBLE_EQ(s.start_ms, life.stretches[i - 1].end_ms);
      }
      total_ms += s.end_ms - s.start_ms;
    }
    EXPECT_NEAR(total_ms, r.finished_ms - r.arrival_ms, 1e-6);
    if (cancelled.contains(r.request_id)) {
      // Never run: queued from arrival until it left.
      EXPECT_EQ(life.stretches.size(), 1u);
      continue;
    }
    EXPECT_DOUBLE_EQ(life.stretches.front().end_ms - life.stretches.front().start_ms,
                     telemetry::queue_time_ms(r));
    // Every prompt token not found in the prefix cache is in a chunk (a preempted request
    // runs the rest of its prompt, and its outputs, as recompute).
    const int64_t uncached = r.prompt_tokens - r.cached_prompt_tokens;
    // A sample that found no batch slot free queued with its first token and computes its
    // context again, as a preempted request does.
    const bool queued_sample =
        later_samples.contains(r.request_id) && !tap.forked.contains(r.request_id);
    const int64_t recomputes = r.preemptions + (queued_sample ? 1 : 0);
    if (recomputes == 0) {
      EXPECT_EQ(tokens_in(life, LifeStage::kPrefill), uncached);
    }
    EXPECT_GE(tokens_in(life, LifeStage::kPrefill) + tokens_in(life, LifeStage::kRecompute),
              uncached);
    EXPECT_EQ(count_stage(life, LifeStage::kPreempted), r.preemptions);
    if (r.preemptions > 0) {
      EXPECT_GT(count_stage(life, LifeStage::kRecompute), 0);
    }
    // A token per decode step; the others came from the step that ended a prompt chunk.
    EXPECT_LE(tokens_in(life, LifeStage::kDecode), telemetry::output_tokens(r));
    EXPECT_GE(tokens_in(life, LifeStage::kDecode), telemetry::output_tokens(r) - 1 - recomputes);
    preemptions += r.preemptions;
    chunked_prompts += count_stage(life, LifeStage::kPrefill) > 1 ? 1 : 0;
  }
  EXPECT_FALSE(cancelled.empty());
  EXPECT_GT(forks, 0);
  EXPECT_FALSE(tap.forked.empty());
  EXPECT_GT(preemptions, 0) << "the pool was meant to be too small";
  EXPECT_GT(chunked_prompts, 0) << "the token budget was meant to split prompts";
}

// A request still running ends at the latest engine time seen, and is not finished.
TEST_F(RequestTimelineTest, ARunningRequestEndsAtTheLatestStep) {
  TimelineTap tap;
  Engine e = engine({.max_batch_size = 2, .kv_type = gguf::GgmlType::F32}, tap);
  std::mt19937 rng(3);
  EngineRequest r;
  r.prompt_ids = prompt(rng, 6);
  r.max_tokens = 8;
  const SequenceId waiting = e.submit(r);
  ASSERT_EQ(tap.timeline.lives().size(), 1u);
  EXPECT_EQ(tap.timeline.lives().front()->stretches.front().stage, LifeStage::kQueued);
  e.step();
  e.step();
  const RequestLife life = *tap.timeline.lives().front();
  EXPECT_EQ(life.request_id, waiting);
  EXPECT_FALSE(life.finished);
  ASSERT_EQ(life.stretches.size(), 3u);  // queued, the prompt, one decode step
  EXPECT_EQ(life.stretches[1].stage, LifeStage::kPrefill);
  EXPECT_EQ(life.stretches[1].tokens, 6);
  EXPECT_EQ(life.stretches[2].stage, LifeStage::kDecode);
  EXPECT_DOUBLE_EQ(life.stretches.back().end_ms, tap.timeline.now_ms());
  EXPECT_EQ(life.record.token_times_ms.size(), 2u);  // the prompt's last chunk made one too
}

// A short request arriving while a long one runs: static batching keeps it queued until the
// long one's batch is done (head-of-line blocking), continuous batching runs it at the next step.
TEST_F(RequestTimelineTest, StaticBatchingShowsHeadOfLineBlockingAsALongQueue) {
  struct Lives {
    RequestLife long_one, short_one;
  };
  const auto run = [](BatchingPolicy policy) {
    TimelineTap tap;
    Engine e = engine(
        {.max_batch_size = 2, .kv_type = gguf::GgmlType::F32, .batching = policy}, tap);
    std::mt19937 rng(5);
    EngineRequest long_request;
    long_request.prompt_ids = prompt(rng, 8);
    long_request.max_tokens = 40;
    const SequenceId long_id = e.submit(long_request);
    for (int i = 0; i < 3; ++i) e.step();  // the long request is running, alone
    EngineRequest short_request;
    short_request.prompt_ids = prompt(rng, 4);
    short_request.max_tokens = 2;
    const SequenceId short_id = e.submit(short_request);
    e.run_until_idle();
    const std::map<int64_t, RequestLife> lives = by_id(tap.timeline.lives());
    return Lives{lives.at(long_id), lives.at(short_id)};
  };
  const auto queued_ms = [](const RequestLife& l) {
    const LifeStretch& q = l.stretches.front();
    EXPECT_EQ(q.stage, LifeStage::kQueued);
    return q.end_ms - q.start_ms;
  };
  const Lives blocked = run(BatchingPolicy::kStatic);
  const Lives joined = run(BatchingPolicy::kContinuous);
  // Static: queued until the long request left.
  EXPECT_GE(blocked.short_one.stretches.front().end_ms, blocked.long_one.record.finished_ms);
  // Continuous: running long before the long request is done.
  EXPECT_LT(joined.short_one.stretches.front().end_ms,
            joined.long_one.record.token_times_ms.at(10));
  // Over 30 decode steps against none: the wait differs by far more than noise.
  EXPECT_GT(queued_ms(blocked.short_one), 5.0 * queued_ms(joined.short_one));
}

}  // namespace
}  // namespace servescope::serving
