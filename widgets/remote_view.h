// What a panel shows while the window is attached to a real serving engine over HTTP (remote
// mode): figures over time, each series marked as measured by ServeScope (the client's own
// clock: requests sent, streams open, tokens received) or reported by the server (its /metrics
// and /slots), so the two kinds are never taken for each other. A panel whose figures need the
// engine's insides (steps, blocks, kernels, attention) shows only why they are not there.
//
// PanelView paints a RemoteView in place of the panel's own snapshot while one is set
// (PanelView::set_remote_view), so every panel says the same thing the same way.
#pragma once

#include <QPointF>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

namespace servescope::widgets {

enum class FigureSource { kMeasured, kReported };
// "measured by ServeScope", "reported by the server".
QString figure_source_text(FigureSource source);

struct RemoteSeries {
  QString name;  // "running requests"
  FigureSource source = FigureSource::kReported;
  std::vector<QPointF> points;  // (seconds since connecting, value), oldest first
};

struct RemoteChart {
  QString id;       // names the chart for its legend toggles and zoom ("requests")
  QString title;    // "Requests at the server"
  QString y_label;  // "requests"
  bool integer_y = false;
  double y_max = 0.0;  // the axis' top at least this (100 for a percentage); 0: from the data
  std::vector<RemoteSeries> series;
};

// One request as the client saw it: TTFT and TPOT on ServeScope's clock.
struct RemoteRequestRow {
  int64_t request = 0;
  bool own = false;  // the user's
  double ttft_ms = -1.0;  // < 0: no token yet
  double tpot_ms = -1.0;  // < 0: fewer than two tokens
  int64_t output_tokens = 0;
  bool finished = false;
};

struct RemoteView {
  QString heading;   // "Batching at llama.cpp's server, http://127.0.0.1:8080"
  QStringList facts;  // "4 slots x 256 tokens set aside (reported by the server)"
  std::vector<RemoteChart> charts;
  std::vector<RemoteRequestRow> requests;  // newest last; empty: no table
  QString not_available;  // "The block grid ...: not available from a remote server."
  QString problem;        // why some figures are missing ("the server has no /metrics ...")
  double from_seconds = -1.0;  // the charts start here (the run talked about), if >= 0
};

// The view as CSV: one row per chart point (chart, series, source, seconds, value), then one
// per request row.
QString remote_view_csv(const RemoteView& view);

}  // namespace servescope::widgets
