// Telemetry: derived request and step figures on hand-made timestamps, the observer queue, and
// the step cost formula on a model small enough to count by hand.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/observer.h"
#include "engine/telemetry/request_timeline.h"
#include "engine/telemetry/step_cost.h"

namespace servescope::telemetry {
namespace {

RequestRecord four_token_request() {
  RequestRecord r;
  r.arrival_ms = 1000.0;
  r.first_scheduled_ms = 1010.0;
  r.token_times_ms = {1050.0, 1070.0, 1100.0, 1120.0};
  return r;
}

TEST(RequestRecord, DerivedFiguresFollowTheServingDefinitions) {
  const RequestRecord r = four_token_request();
  EXPECT_EQ(output_tokens(r), 4);
  EXPECT_DOUBLE_EQ(queue_time_ms(r), 10.0);
  EXPECT_DOUBLE_EQ(time_to_first_token_ms(r), 50.0);
  EXPECT_DOUBLE_EQ(latency_ms(r), 120.0);
  EXPECT_EQ(inter_token_latencies_ms(r), (std::vector<double>{20.0, 30.0, 20.0}));
  EXPECT_DOUBLE_EQ(time_per_output_token_ms(r), (120.0 - 50.0) / 3.0);
  EXPECT_DOUBLE_EQ(tokens_per_s(r), 4.0 / 0.120);
}

TEST(RequestRecord, FiguresThatNeedMoreTokensAreZero) {
  RequestRecord r;
  r.arrival_ms = 5.0;
  EXPECT_EQ(time_to_first_token_ms(r), 0.0);
  EXPECT_EQ(tokens_per_s(r), 0.0);
  r.token_times_ms = {25.0};
  EXPECT_DOUBLE_EQ(time_to_first_token_ms(r), 20.0);
  EXPECT_EQ(time_per_output_token_ms(r), 0.0);  // undefined with one token
  EXPECT_TRUE(inter_token_latencies_ms(r).empty());
  EXPECT_DOUBLE_EQ(tokens_per_s(r), 1.0 / 0.020);
}

TEST(StepRecord, OccupancyBandwidthAndThroughput) {
  StepRecord s;
  s.sequences = 3;
  s.max_batch_size = 4;
  s.weight_bytes_read = 900'000'000;
  s.kv_bytes_read = 90'000'000;
  s.kv_bytes_written = 10'000'000;
  s.flops = 4e9;
  s.wall_ms = 10.0;
  EXPECT_DOUBLE_EQ(batch_occupancy(s), 0.75);
  EXPECT_DOUBLE_EQ(achieved_gb_per_s(s), 100.0);     // 1 GB in 10 ms
  EXPECT_DOUBLE_EQ(achieved_gflop_per_s(s), 400.0);  // 4 GFLOP in 10 ms
  EXPECT_DOUBLE_EQ(arithmetic_intensity(s), 4.0);
  s.wall_ms = 0.0;
  EXPECT_EQ(achieved_gb_per_s(s), 0.0);
  s.max_batch_size = 0;
  EXPECT_EQ(batch_occupancy(s), 0.0);
}

TEST(Percentile, InterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {40.0, 10.0, 30.0, 20.0};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 10.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 25.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 40.0);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 37.0);
  EXPECT_EQ(percentile(std::vector<double>{}, 50), 0.0);
}

TEST(TelemetryQueue, DeliversInOrderAndDropsTheOldestWhenFull) {
  TelemetryQueue queue(3);
  for (int64_t i = 0; i < 5; ++i) {
    StepRecord s;
    s.step_index = i;
    queue.on_step(s);
  }
  const std::vector<TelemetryItem> items = queue.drain();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(std::get<StepRecord>(items[0]).step_index, 2);
  EXPECT_EQ(std::get<StepRecord>(items[2]).step_index, 4);
  EXPECT_EQ(queue.dropped(), 2u);
  EXPECT_TRUE(queue.drain().empty());
  queue.on_kv_event(KvEvent{KvEventKind::kAppend, 3, {7}, 1, 1});
  queue.on_request(RequestRecord{});
  TokenRecord token;
  token.request_id = 4;
  queue.on_token(token);
  const auto more = queue.drain();
  ASSERT_EQ(more.size(), 3u);
  EXPECT_EQ(std::get<KvEvent>(more[0]).sequence, 3);
  EXPECT_EQ(std::get<TokenRecord>(more[2]).request_id, 4);
  EXPECT_THROW(TelemetryQueue(0), InputError);
}

TEST(TelemetryQueue, AProducerAndAConsumerOnTwoThreadsLoseNothingWhenItFits) {
  TelemetryQueue queue(100000);
  constexpr int64_t kSteps = 20000;
  std::thread producer([&] {
    for (int64_t i = 0; i < kSteps; ++i) {
      StepRecord s;
      s.step_index = i;
      queue.on_step(s);
    }
  });
  std::vector<int64_t> seen;
  while (static_cast<int64_t>(seen.size()) < kSteps) {
    for (const TelemetryItem& item : queue.drain()) {
      seen.push_back(std::get<StepRecord>(item).step_index);
    }
  }
  producer.join();
  for (int64_t i = 0; i < kSteps; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
}

// Three layers: the layer count coincides with neither the head count nor the 2 of K and V or
// of a multiply-add, so a formula that swaps them fails.
model::ModelConfig tiny_llama() {
  model::ModelConfig c;
  c.architecture = model::Architecture::kLlama;
  c.vocab_size = 10;
  c.dim = 8;
  c.n_layers = 3;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.ffn_dim = 16;
  return c;
}

TEST(StepCost, MatmulParametersPerLayer) {
  // llama: q 8x8, k 8x4, v 8x4, o 8x8, gate/up/down 3 x 8x16
  EXPECT_EQ(matmul_parameters_per_layer(tiny_llama()), 64 + 32 + 32 + 64 + 384);
  model::ModelConfig gpt2 = tiny_llama();
  gpt2.architecture = model::Architecture::kGpt2;
  gpt2.n_kv_heads = 2;
  // gpt2: qkv 8x24, o 8x8, up/down 2 x 8x16
  EXPECT_EQ(matmul_parameters_per_layer(gpt2), 192 + 64 + 256);
}

TEST(StepCost, CountsFlopsAndBytesOfAMixedBatch) {
  const model::ModelConfig c = tiny_llama();
  const uint64_t kv_per_token = 3 * 2 * 4 * 2;  // 3 layers, K and V, kv_dim 4, F16
  // A 3-token prefill chunk after 5 cached tokens (no logits yet), and a decode at context 9.
  const std::vector<SequenceWork> batch = {{3, 5, false}, {1, 9, true}};
  const StepCost cost = estimate_step_cost(c, 1000, kv_per_token, batch);
  EXPECT_DOUBLE_EQ(cost.matmul_flops, 2.0 * 576 * 3 * 4);  // 2 x parameters x layers x tokens
  EXPECT_DOUBLE_EQ(cost.logits_flops, 2.0 * 8 * 10);
  // contexts attended: 6, 7, 8 and 10; 4 x heads x head_dim x layers = 96 per context token
  EXPECT_DOUBLE_EQ(cost.attention_flops, 96.0 * (6 + 7 + 8 + 10));
  EXPECT_EQ(cost.weight_bytes_read, 1000u);
  EXPECT_EQ(cost.kv_bytes_read, kv_per_token * (8 + 10));
  EXPECT_EQ(cost.kv_bytes_written, kv_per_token * 4);
  EXPECT_EQ(cost.bytes_moved(), 1000u + kv_per_token * 22);
  EXPECT_DOUBLE_EQ(cost.flops(), cost.matmul_flops + cost.logits_flops + cost.attention_flops);
  EXPECT_EQ(estimate_step_cost(c, 1000, kv_per_token, {}).bytes_moved(), 0u);
}

// A recording without arrivals (trace versions 1 and 2): a life first seen in a step gets its
// queued stretch from the finished record's arrival; the kept bound forgets finished lives first.
TEST(RequestTimeline, ALifeWithoutItsArrivalGetsItsQueueWhenItFinishes) {
  RequestTimeline timeline(1);
  StepRecord s;
  s.start_ms = 1010.0;
  s.end_ms = 1050.0;
  s.batch = {{3, 0, SequencePhase::kPrefill, 0, {1, 2}, 7}};
  timeline.on_step(s);
  std::vector<const RequestLife*> lives = timeline.lives();
  ASSERT_EQ(lives.size(), 1u);
  EXPECT_FALSE(lives[0]->arrival_known);
  EXPECT_EQ(lives[0]->stretches.front().stage, LifeStage::kPrefill);
  RequestRecord r = four_token_request();
  r.request_id = 3;
  r.finished_ms = 1121.0;
  timeline.on_request(r);
  lives = timeline.lives();
  ASSERT_EQ(lives[0]->stretches.size(), 2u);
  EXPECT_EQ(lives[0]->stretches[0].stage, LifeStage::kQueued);
  EXPECT_DOUBLE_EQ(lives[0]->stretches[0].start_ms, 1000.0);
  EXPECT_DOUBLE_EQ(lives[0]->stretches[0].end_ms, 1010.0);
  EXPECT_DOUBLE_EQ(lives[0]->stretches[1].end_ms, 1121.0);
  EXPECT_EQ(lives[0]->record.token_times_ms, r.token_times_ms);  // the engine's own times
  timeline.on_arrival({4, 8, 1130.0});
  lives = timeline.lives();
  ASSERT_EQ(lives.size(), 1u);  // request 3, finished, made room
  EXPECT_EQ(lives[0]->request_id, 4);
}

}  // namespace
}  // namespace servescope::telemetry
