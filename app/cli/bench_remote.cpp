// servescope-cli bench --remote URL: the bench's workload against a real serving engine.
#include <QCoreApplication>
#include <iostream>
#include <memory>

#include "app/cli/command_support.h"
#include "app/remote/remote_load.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// The figures a local bench reads from the engine's steps; a remote server does not show them.
constexpr const char* kEngineInsides[] = {
    "busy_s",        "busy_throughput_tokens_per_s", "mean_batch_occupancy", "kv_peak_blocks",
    "kv_peak_bytes", "preemptions",                  "steps",                "mean_step_ms",
    "decode_only_steps", "mean_decode_step_ms",      "decode_tokens_per_s",  "mean_kernel_ms",
    "achieved_gb_per_s", "achieved_gflop_per_s"};

json optional_json(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json metrics_json(const remote::ServerMetrics& m) {
  json j = {{"requests_running", optional_json(m.requests_running)},
            {"requests_waiting", optional_json(m.requests_waiting)},
            {"kv_usage", optional_json(m.kv_usage)},
            {"prompt_tokens_total", optional_json(m.prompt_tokens_total)},
            {"generated_tokens_total", optional_json(m.generated_tokens_total)},
            {"preemptions_total", optional_json(m.preemptions_total)},
            {"decode_calls_total", optional_json(m.decode_calls_total)}};
  if (m.ttft_s) j["ttft_mean_ms"] = 1000.0 * m.ttft_s->mean();
  if (m.tpot_s) j["tpot_mean_ms"] = 1000.0 * m.tpot_s->mean();
  return j;
}

// The server's own view: what it reported on /metrics, the counters' growth over the run.
json server_json(const remote::ServerReport& report) {
  json slots = nullptr;
  if (report.slots) {
    // llama-server sets aside each slot's whole context up front.
    slots = {{"slots", report.slots->slots},
             {"context_tokens_reserved", report.slots->context_tokens},
             {"peak_slots_processing", report.peak_slots_processing},
             {"peak_tokens_held", report.peak_slot_tokens}};
  }
  if (!report.last) {
    return {{"metrics", nullptr}, {"why", report.metrics_problem}, {"slots", slots}};
  }
  const remote::ServerMetrics& first = *report.first;
  const remote::ServerMetrics& last = *report.last;
  const auto grew = [](const std::optional<double>& a, const std::optional<double>& b) {
    return a && b ? json(*b - *a) : json(nullptr);
  };
  return {{"kind", remote::server_kind_name(last.kind)},
          {"polls", report.polls},
          {"peak_requests_running", report.peak_running},
          {"peak_requests_waiting", report.peak_waiting},
          {"peak_kv_usage", last.kv_usage ? json(report.peak_kv_usage) : json(nullptr)},
          {"prompt_tokens_during_run", grew(first.prompt_tokens_total, last.prompt_tokens_total)},
          {"generated_tokens_during_run",
           grew(first.generated_tokens_total, last.generated_tokens_total)},
          {"decode_calls_during_run", grew(first.decode_calls_total, last.decode_calls_total)},
          {"last", metrics_json(last)},
          {"slots", slots}};
}

}  // namespace

int run_bench_remote(const Options& options, const serving::WorkloadSpec& spec, json doc,
                     std::ostream& out) {
  const QUrl url(QString::fromStdString(*options.get("remote")), QUrl::StrictMode);
  if (!url.isValid() || (url.scheme() != "http" && url.scheme() != "https") || url.host().isEmpty()) {
    throw UsageError("--remote needs a server address such as http://127.0.0.1:8080, got '" +
                     *options.get("remote") + "'");
  }
  // Qt Network runs on an event loop: a core application for it when none exists.
  std::unique_ptr<QCoreApplication> app;
  if (QCoreApplication::instance() == nullptr) {
    static int argc = 1;
    static char name[] = "servescope-cli";
    static char* argv[] = {name, nullptr};
    app = std::make_unique<QCoreApplication>(argc, argv);
  }
  remote::RemoteLoadOptions remote_options;
  remote_options.server = url;
  remote_options.timeout_s = options.get_double("timeout-s", 30.0);
  const std::vector<serving::SimulatedRequest> requests = serving::make_workload(spec);
  std::cerr << "bench: " << requests.size() << " requests to " << url.toString().toStdString()
            << "\n";
  const remote::RemoteLoadResult result = remote::run_remote_load(remote_options, requests);
  if (!result.ok()) throw InputError("--remote: " + result.error);

  std::vector<telemetry::RequestRecord> records;
  for (const remote::RemoteRequestResult& r : result.requests) records.push_back(r.record);
  const serving::LoadSummary s = serving::summarize_load({}, records, result.wall_ms, 0);
  doc["backend"] = "remote";
  doc["remote"] = url.toString().toStdString();
  doc["clients"] = spec.clients;
  doc.update(load_summary_json(s));
  json unavailable = json::array();
  for (const char* key : kEngineInsides) {
    doc[key] = nullptr;
    unavailable.push_back(key);
  }
  doc["not_available_from_a_remote_server"] = unavailable;
  doc["measured_by_servescope"] = {"requests", "output_tokens", "wall_s",
                                   "throughput_tokens_per_s", "ttft_ms", "tpot_ms"};
  doc["reported_by_the_server"] = server_json(result.server);
  doc["interrupted"] = false;
  out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace servescope::cli
