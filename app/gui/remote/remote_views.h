// Remote mode's view of each panel (widgets/remote_view.h), made from the remote folder:
// Batching (requests at the server over time, slots, each request's TTFT and TPOT), KV cache
// (the cache in use as the server reports it), Phases (prompt and generated tokens per second);
// the other panels say why their figures need the engine's insides.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "app/gui/panels/panel_id.h"
#include "app/gui/remote/remote_folder.h"
#include "widgets/remote_view.h"

namespace servescope::gui {

widgets::RemoteView remote_view_for(PanelId panel, const RemoteFolder& folder);

// A counter's growth per second over the last `window_ms` (or more) before each poll that has
// it: (seconds, rate) per poll. `read` gives the counter at a poll, or nullopt where it has none;
// a counter that fell (a restarted server) gives no rate across the fall.
std::vector<QPointF> counter_rate(
    const std::deque<RemotePollPoint>& polls,
    const std::function<std::optional<double>(const RemotePollPoint&)>& read,
    double window_ms = 1000.0);

}  // namespace servescope::gui
