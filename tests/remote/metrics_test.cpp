// The remote server's reports: server-sent events cut at any byte, Prometheus text (llama.cpp's
// and vLLM's names, summed over engines), and text that is neither.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "app/remote/prometheus_text.h"
#include "app/remote/server_metrics.h"
#include "app/remote/sse_parser.h"

namespace servescope::remote {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(SERVESCOPE_TEST_DATA_DIR) + "/remote/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SseParser, EventsCutAtEveryByteComeOutWholeAndInOrder) {
  const std::string stream =
      ": keep-alive\n\ndata: {\"a\":1}\n\ndata: {\"b\":\r\ndata: 2}\r\n\r\nevent: x\ndata: "
      "[DONE]\n\ndata: {\"late\":1}\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser;
    std::vector<std::string> events = parser.feed(std::string_view(stream).substr(0, cut));
    const std::vector<std::string> rest = parser.feed(std::string_view(stream).substr(cut));
    events.insert(events.end(), rest.begin(), rest.end());
    EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "{\"b\":\n2}"})) << "cut " << cut;
    EXPECT_TRUE(parser.done());
  }
  SseParser dropped;
  dropped.feed("data: {\"a\":1}\n\ndata: {\"b\"");
  EXPECT_FALSE(dropped.done());
  EXPECT_TRUE(dropped.has_partial_event());
}

TEST(PrometheusText, ReadsNamesLabelsValuesAndSkipsComments) {
  const std::vector<PrometheusSample> samples = parse_prometheus_text(
      "# HELP x An x\n# TYPE x counter\nx 3\nx_bucket{le=\"+Inf\",q=\"a\\\"b\"} 7 1700000000\n"
      "y NaN\nz +Inf\n\n");
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].name, "x");
  EXPECT_EQ(samples[0].value, 3.0);
  EXPECT_EQ(samples[1].labels.at("le"), "+Inf");
  EXPECT_EQ(samples[1].labels.at("q"), "a\"b");
  EXPECT_EQ(samples[1].value, 7.0);
  EXPECT_TRUE(std::isnan(samples[2].value));
  EXPECT_TRUE(std::isinf(samples[3].value));
}

TEST(PrometheusText, AMalformedLineIsNamed) {
  try {
    parse_prometheus_text("ok 1\n<html>\n");
    FAIL() << "no error";
  } catch (const MetricsFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_prometheus_text("x{a=\"1\" 2\n"), MetricsFormatError);
  EXPECT_THROW(parse_prometheus_text("x twelve\n"), MetricsFormatError);
}

// vLLM 0.10's names, two engines: gauges and counters add up, the histograms give means.
TEST(ServerMetrics, ReadsVllmsNamesSummedOverEngines) {
  const ServerMetrics m = read_server_metrics(read_data("vllm-0.10-metrics.txt"));
  EXPECT_EQ(m.kind, ServerKind::kVllm);
  EXPECT_EQ(m.requests_running, 21.0);
  EXPECT_EQ(m.requests_waiting, 3.0);
  EXPECT_NEAR(*m.kv_usage, 0.66, 1e-12);
  EXPECT_EQ(m.prompt_tokens_total, 88214.0);
  EXPECT_EQ(m.generated_tokens_total, 172000.0);
  EXPECT_EQ(m.preemptions_total, 2.0);
  ASSERT_TRUE(m.ttft_s);
  EXPECT_DOUBLE_EQ(m.ttft_s->mean(), 50.0 / 500.0);
  ASSERT_TRUE(m.tpot_s);
  EXPECT_DOUBLE_EQ(m.tpot_s->mean(), 100.0 / 5000.0);
}

// vLLM before V1 named the KV usage gpu_cache_usage_perc and the TPOT histogram
// time_per_output_token_seconds.
TEST(ServerMetrics, ReadsOlderVllmNames) {
  const ServerMetrics m = read_server_metrics(
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
      "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 2\n"
      "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 100\n");
  EXPECT_EQ(m.kv_usage, 0.5);
  EXPECT_DOUBLE_EQ(m.tpot_s->mean(), 0.02);
  EXPECT_FALSE(m.requests_running);
}

TEST(ServerMetrics, ReadsLlamaCppsNames) {
  const ServerMetrics m = read_server_metrics(read_data("llama-server-metrics.txt"));
  EXPECT_EQ(m.kind, ServerKind::kLlamaCpp);
  EXPECT_EQ(m.requests_running, 0.0);
  EXPECT_EQ(m.requests_waiting, 0.0);
  EXPECT_EQ(m.prompt_tokens_total, 356.0);
  EXPECT_EQ(m.prompt_tokens_cached_total, 0.0);
  EXPECT_EQ(m.generated_tokens_total, 349.0);
  EXPECT_EQ(m.decode_calls_total, 91.0);
  EXPECT_FALSE(m.kv_usage);  // this release reports it per slot on /slots, not on /metrics
}

// Recorded mid-run: two of four slots generating (a 10-token prompt, 14 tokens so far: 24 held
// each), two never used; each slot sets aside 256 tokens.
TEST(ServerMetrics, ReadsLlamaServersSlots) {
  const SlotsReport slots = read_llama_slots(read_data("llama-server-slots.json"));
  EXPECT_EQ(slots.slots, 4);
  EXPECT_EQ(slots.processing, 2);
  EXPECT_EQ(slots.context_tokens, 4 * 256);
  EXPECT_EQ(slots.tokens_held, 2 * 24);
  EXPECT_DOUBLE_EQ(slots.usage(), 48.0 / 1024.0);
  EXPECT_THROW(read_llama_slots("{\"error\":\"slots disabled\"}"), MetricsFormatError);
  EXPECT_THROW(read_llama_slots("[{\"id\":0}]"), MetricsFormatError);
}

TEST(ServerMetrics, AnotherServersMetricsAreRefused) {
  EXPECT_THROW(read_server_metrics("process_cpu_seconds_total 12\nhttp_requests_total 3\n"),
               MetricsFormatError);
}

}  // namespace
}  // namespace servescope::remote
