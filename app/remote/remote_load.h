// A load against a real serving engine over HTTP (an OpenAI-compatible server: llama.cpp's
// llama-server, vLLM): each simulated request becomes a streaming POST /v1/completions sent at
// its arrival time, and the client's clock measures each token's arrival, so TTFT and TPOT are
// measured by ServeScope as a user of the server sees them. Meanwhile the server's /metrics is
// polled: its own figures (running and waiting requests, KV usage, token counters), reported
// by the server.
//
// Qt Network on the calling thread's event loop: run() spins a QEventLoop until every request
// ended or failed, so the command line (with a QCoreApplication) and the window can both use
// it. Failures never hang: a refused connection, no answer within the timeout, a stream the
// server drops before "[DONE]", an answer that is not an OpenAI completion stream, and
// /metrics text that is not Prometheus each end the run with a message saying which.
#pragma once

#include <QString>
#include <QUrl>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/remote/server_metrics.h"
#include "engine/serving/load_generator.h"
#include "engine/telemetry/records.h"

namespace servescope::remote {

struct RemoteLoadOptions {
  QUrl server;                 // e.g. http://127.0.0.1:8080 (no path)
  double timeout_s = 30.0;     // no byte from the server for this long: the request failed
  double metrics_poll_ms = 100.0;
  bool poll_metrics = true;    // a server started without --metrics answers 404 / 501
};

// One request as the client saw it. record: arrival (when it was sent), first_scheduled_ms
// unknown (-1), token_times_ms (each streamed token's arrival), finished_ms, prompt_tokens;
// every time in ms since the load started, on the client's steady clock.
struct RemoteRequestResult {
  telemetry::RequestRecord record;
  std::string text;          // the continuation as streamed
  std::string finish_reason;  // the server's ("length", "stop")
  std::optional<int64_t> completion_tokens;  // the server's usage count, when it sends one
};

// The server's reports over the run: the first and last /metrics read and the peaks between.
struct ServerReport {
  std::optional<ServerMetrics> first;
  std::optional<ServerMetrics> last;
  double peak_running = 0.0;
  double peak_waiting = 0.0;
  double peak_kv_usage = 0.0;
  int64_t polls = 0;
  std::string metrics_problem;  // why no figures came (e.g. started without --metrics)
  // llama-server's /slots (started with --slots; vLLM has none): the last read and the peaks.
  std::optional<SlotsReport> slots;
  int64_t peak_slots_processing = 0;
  int64_t peak_slot_tokens = 0;
};

struct RemoteLoadResult {
  std::vector<RemoteRequestResult> requests;  // in the workload's order
  double wall_ms = 0.0;  // the first send to the last token
  ServerReport server;
  std::string error;  // empty: every request ended as it should
  bool ok() const { return error.empty(); }
};

// Sends `requests` (in arrival order) and waits for the streams. Greedy (temperature 0), each
// asking for exactly its max_tokens (ignore_eos), prompts sent as token ids.
RemoteLoadResult run_remote_load(const RemoteLoadOptions& options,
                                 const std::vector<serving::SimulatedRequest>& requests);

}  // namespace servescope::remote
