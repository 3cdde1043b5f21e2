#include "app/gui/remote/remote_views.h"

#include <QCoreApplication>
#include <algorithm>

#include "engine/telemetry/metrics.h"
#include "widgets/chart_painting.h"

namespace servescope::gui {

namespace {

using widgets::FigureSource;
using widgets::RemoteChart;
using widgets::RemoteSeries;
using widgets::RemoteView;

QString tr(const char* text) { return QCoreApplication::translate("RemoteViews", text); }

QString reported() { return widgets::figure_source_text(FigureSource::kReported); }
QString measured() { return widgets::figure_source_text(FigureSource::kMeasured); }

// "llama.cpp's server at http://127.0.0.1:8080 (model stories.gguf)"
QString server_text(const RemoteFolder& folder) {
  const QString kind = folder.server_kind();
  QString text = kind.isEmpty() ? tr("the server at %1").arg(folder.server().url.toString())
                                : tr("%1's server at %2").arg(kind, folder.server().url.toString());
  if (!folder.server().model.isEmpty()) text += tr(" (model %1)").arg(folder.server().model);
  return text;
}

// One point per poll where `read` has a value.
RemoteSeries gauge(const QString& name, FigureSource source, const RemoteFolder& folder,
                   const std::function<std::optional<double>(const RemotePollPoint&)>& read) {
  RemoteSeries series{name, source, {}};
  for (const RemotePollPoint& poll : folder.polls()) {
    if (const std::optional<double> value = read(poll)) {
      series.points.emplace_back(poll.at_ms / 1000.0, *value);
    }
  }
  return series;
}

// A figure of the server's /metrics at a poll, where it reported one.
std::function<std::optional<double>(const RemotePollPoint&)> metric(
    std::optional<double> remote::ServerMetrics::*field) {
  return [field](const RemotePollPoint& p) -> std::optional<double> {
    return p.metrics ? (*p.metrics).*field : std::nullopt;
  };
}

void add_if_any(RemoteChart& chart, RemoteSeries series) {
  if (!series.points.empty()) chart.series.push_back(std::move(series));
}

const RemotePollPoint* last_with_metrics(const RemoteFolder& folder) {
  for (auto it = folder.polls().rbegin(); it != folder.polls().rend(); ++it) {
    if (it->metrics) return &*it;
  }
  return nullptr;
}

const std::optional<remote::SlotsReport>& last_slots(const RemoteFolder& folder) {
  static const std::optional<remote::SlotsReport> none;
  return folder.polls().empty() ? none : folder.polls().back().slots;
}

RemoteView base_view(const QString& what, const RemoteFolder& folder) {
  RemoteView view;
  view.heading = tr("%1 at %2").arg(what, server_text(folder));
  view.problem = folder.metrics_problem();
  // The charts start a little before the user's latest request: the run being talked about.
  for (auto it = folder.requests().rbegin(); it != folder.requests().rend(); ++it) {
    if (it->own) {
      view.from_seconds = std::max(0.0, it->record.arrival_ms / 1000.0 - 2.0);
      break;
    }
  }
  return view;
}

RemoteView batching_view(const RemoteFolder& folder) {
  RemoteView view = base_view(tr("Batching"), folder);
  if (const auto& slots = last_slots(folder)) {
    view.facts << tr("%1 slots: at most %1 requests decode together; the others wait (%2, /slots).")
                      .arg(slots->slots)
                      .arg(reported());
  }
  const std::optional<remote::ServerMetrics>& first = folder.first_metrics();
  const RemotePollPoint* last = last_with_metrics(folder);
  if (first && last && first->decode_calls_total && last->metrics->decode_calls_total &&
      first->generated_tokens_total && last->metrics->generated_tokens_total) {
    const double calls = *last->metrics->decode_calls_total - *first->decode_calls_total;
    const double tokens = *last->metrics->generated_tokens_total - *first->generated_tokens_total;
    if (calls > 0 && tokens > 0) {
      view.facts << tr("Since connecting: %1 tokens generated in %2 batched decode calls, %3 per "
                       "call (%4).")
                        .arg(tokens, 0, 'f', 0)
                        .arg(calls, 0, 'f', 0)
                        .arg(widgets::chart::format_number(tokens / calls))
                        .arg(reported());
    }
  }
  view.facts << tr("Requests sent: %1; streams open now: %2 (%3).")
                    .arg(folder.requests_sent())
                    .arg(folder.streams_open())
                    .arg(measured());

  RemoteChart requests{QStringLiteral("remote-requests"), tr("Requests over time"),
                       tr("requests"), true, 1.0, {}};
  add_if_any(requests, gauge(tr("running"), FigureSource::kReported, folder,
                             metric(&remote::ServerMetrics::requests_running)));
  add_if_any(requests, gauge(tr("waiting"), FigureSource::kReported, folder,
                             metric(&remote::ServerMetrics::requests_waiting)));
  add_if_any(requests, gauge(tr("slots busy"), FigureSource::kReported, folder,
                             [](const RemotePollPoint& p) -> std::optional<double> {
                               if (!p.slots) return std::nullopt;
                               return static_cast<double>(p.slots->processing);
                             }));
  add_if_any(requests, gauge(tr("streams open"), FigureSource::kMeasured, folder,
                             [](const RemotePollPoint& p) -> std::optional<double> {
                               return static_cast<double>(p.streams_open);
                             }));
  view.charts.push_back(std::move(requests));

  for (const RemoteRequestState& r : folder.requests()) {
    widgets::RemoteRequestRow row;
    row.request = r.record.request_id;
    row.own = r.own;
    row.output_tokens = telemetry::output_tokens(r.record);
    row.finished = r.ended;
    if (row.output_tokens >= 1) row.ttft_ms = telemetry::time_to_first_token_ms(r.record);
    if (row.output_tokens >= 2) row.tpot_ms = telemetry::time_per_output_token_ms(r.record);
    view.requests.push_back(row);
  }
  view.not_available =
      tr("Which request held which slot in each step, and the batch sweep: not available from a "
         "remote server (it reports counts, not its steps).");
  return view;
}

RemoteView kv_view(const RemoteFolder& folder) {
  RemoteView view = base_view(tr("KV cache"), folder);
  const auto& slots = last_slots(folder);
  if (slots) {
    view.facts << tr("Set aside: %1 slots x %2 tokens = %3 tokens, whether a request fills its "
                     "slot or not (%4, /slots).")
                      .arg(slots->slots)
                      .arg(slots->slots > 0 ? slots->context_tokens / slots->slots : 0)
                      .arg(slots->context_tokens)
                      .arg(reported());
    view.facts << tr("Held now: %1 tokens, %2% of what is set aside (a finished request's stay "
                     "in its slot until the slot is reused).")
                      .arg(slots->tokens_held)
                      .arg(widgets::chart::format_number(100.0 * slots->usage()));
  }
  RemoteChart usage{QStringLiteral("remote-kv-usage"), tr("KV cache in use"), tr("% in use"),
                    false, 100.0, {}};
  add_if_any(usage, gauge(tr("blocks in use"), FigureSource::kReported, folder,
                          [](const RemotePollPoint& p) -> std::optional<double> {
                            if (!p.metrics || !p.metrics->kv_usage) return std::nullopt;
                            return 100.0 * *p.metrics->kv_usage;
                          }));
  add_if_any(usage, gauge(tr("tokens held of those set aside"), FigureSource::kReported, folder,
                          [](const RemotePollPoint& p) -> std::optional<double> {
                            if (!p.slots) return std::nullopt;
                            return 100.0 * p.slots->usage();
                          }));
  if (!usage.series.empty()) view.charts.push_back(std::move(usage));
  if (slots) {
    RemoteChart held{QStringLiteral("remote-kv-tokens"), tr("Tokens held in the slots"),
                     tr("tokens"), true, 0.0, {}};
    add_if_any(held, gauge(tr("tokens held"), FigureSource::kReported, folder,
                           [](const RemotePollPoint& p) -> std::optional<double> {
                             if (!p.slots) return std::nullopt;
                             return static_cast<double>(p.slots->tokens_held);
                           }));
    view.charts.push_back(std::move(held));
  }
  if (view.charts.empty()) {
    view.facts << tr("The server reports no KV cache figures (vLLM's kv_cache_usage_perc, "
                     "llama-server's /slots with --slots).");
  }
  view.not_available =
      tr("The block grid, bytes per layer and the paged-against-reserved comparison need the "
         "engine's block table: not available from a remote server.");
  return view;
}

RemoteView phases_view(const RemoteFolder& folder) {
  RemoteView view = base_view(tr("Prompt and generated tokens"), folder);
  RemoteChart rates{QStringLiteral("remote-rates"), tr("Tokens per second (over the last second)"),
                    tr("tokens/s"), false, 10.0, {}};
  rates.series.push_back({tr("prompt tokens computed"), FigureSource::kReported,
                          counter_rate(folder.polls(),
                                       metric(&remote::ServerMetrics::prompt_tokens_total))});
  rates.series.push_back(
      {tr("prompt tokens from its cache"), FigureSource::kReported,
       counter_rate(folder.polls(), metric(&remote::ServerMetrics::prompt_tokens_cached_total))});
  rates.series.push_back(
      {tr("tokens generated"), FigureSource::kReported,
       counter_rate(folder.polls(), metric(&remote::ServerMetrics::generated_tokens_total))});
  rates.series.push_back({tr("tokens received"), FigureSource::kMeasured,
                          counter_rate(folder.polls(), [](const RemotePollPoint& p) {
                            return std::optional<double>(static_cast<double>(p.tokens_received));
                          })});
  std::erase_if(rates.series, [](const RemoteSeries& s) { return s.points.empty(); });
  if (!rates.series.empty()) view.charts.push_back(std::move(rates));

  const RemotePollPoint* last = last_with_metrics(folder);
  if (last && last->metrics->ttft_s && last->metrics->tpot_s) {
    view.facts << tr("Since the server started: mean TTFT %1 ms, mean time per output token %2 "
                     "ms (%3, its histograms).")
                      .arg(widgets::chart::format_number(1000.0 * last->metrics->ttft_s->mean()))
                      .arg(widgets::chart::format_number(1000.0 * last->metrics->tpot_s->mean()))
                      .arg(reported());
  }
  view.facts << tr("A token is counted by the server when it is made and by ServeScope when it "
                   "arrives: while the two rates differ, that many tokens per second are on "
                   "their way (sent, in buffers, or waiting for a busy client to read them).");
  view.not_available =
      tr("Each step's prefill and decode blocks, kernel spans and the decode time against "
         "context: not available from a remote server.");
  return view;
}

RemoteView unavailable_view(PanelId panel, const RemoteFolder& folder) {
  RemoteView view = base_view(panel_title_text(panel), folder);
  view.problem.clear();
  switch (panel) {
    case PanelId::kRoofline:
      view.not_available =
          tr("Not available from a remote server: the roofline's points are the engine's own "
             "steps (FLOPs and bytes per step) and its roofs this machine's; a server reports "
             "neither.");
      break;
    case PanelId::kAttention:
      view.not_available = tr("Not available from a remote server: attention weights are inside "
                              "the server's forward pass, and it does not report them.");
      break;
    case PanelId::kQuantisation:
      view.not_available =
          tr("Not available from a remote server: the quantisation lab measures a model's "
             "weights, and the server's are on the server.");
      break;
    case PanelId::kTimeline:
      view.not_available =
          tr("Not available from a remote server: each request's stages (queued, prefill, "
             "decode) are the scheduler's, and a server reports only its totals. The Batching "
             "panel lists each request's TTFT and TPOT as measured here.");
      break;
    default:
      break;
  }
  view.not_available += tr(" File > Disconnect from the server shows the local engine's again.");
  return view;
}

}  // namespace

std::vector<QPointF> counter_rate(
    const std::deque<RemotePollPoint>& polls,
    const std::function<std::optional<double>(const RemotePollPoint&)>& read, double window_ms) {
  std::vector<QPointF> points;
  for (size_t i = 0; i < polls.size(); ++i) {
    const std::optional<double> now = read(polls[i]);
    if (!now) continue;
    // The latest earlier poll at least window_ms back that has the counter.
    for (size_t j = i; j-- > 0;) {
      if (polls[i].at_ms - polls[j].at_ms < window_ms) continue;
      const std::optional<double> before = read(polls[j]);
      if (!before) continue;
      if (*now >= *before) {
        points.emplace_back(polls[i].at_ms / 1000.0,
                            (*now - *before) / ((polls[i].at_ms - polls[j].at_ms) / 1000.0));
      }
      break;
    }
  }
  return points;
}

widgets::RemoteView remote_view_for(PanelId panel, const RemoteFolder& folder) {
  switch (panel) {
    case PanelId::kBatching:
      return batching_view(folder);
    case PanelId::kKvCache:
      return kv_view(folder);
    case PanelId::kPhases:
      return phases_view(folder);
    default:
      return unavailable_view(panel, folder);
  }
}

}  // namespace servescope::gui
