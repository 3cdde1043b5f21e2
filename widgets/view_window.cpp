#include "widgets/view_window.h"

#include <algorithm>

namespace servescope::widgets {

ViewWindows::State* ViewWindows::find(const QString& id) {
  for (auto& [name, state] : charts_) {
    if (name == id) return &state;
  }
  return nullptr;
}

const ViewWindows::State* ViewWindows::find(const QString& id) const {
  return const_cast<ViewWindows*>(this)->find(id);
}

void ViewWindows::settle(State& state, chart::Range window) {
  const chart::Range& full = state.full;
  const double span = std::max(window.span(), std::min(state.min_span, full.span()));
  if (span >= full.span() || full.span() <= 0.0) {
    state.window = full;
    state.zoomed = false;
    return;
  }
  const double centre = (window.min + window.max) / 2;
  double min = std::clamp(centre - span / 2, full.min, full.max - span);
  state.window = {min, min + span};
  state.zoomed = true;
}

chart::Range ViewWindows::window(const QString& id, chart::Range full, double min_span) {
  State* state = find(id);
  if (state == nullptr) state = &charts_.emplace_back(id, State{}).second;
  state->full = full;
  state->min_span = min_span;
  // Unzoomed, the window follows the data; zoomed, it stays on the same values, unless the
  // data moved away from them (a new engine's clock starts again at 0).
  const bool inside = state->window.max > full.min && state->window.min < full.max;
  if (state->zoomed && inside)
    settle(*state, state->window);
  else
    settle(*state, full);
  return state->window;
}

void ViewWindows::add_plot(const QString& id, const QRectF& plot) {
  if (State* state = find(id)) state->plots.push_back(plot);
}

void ViewWindows::clear_plots() {
  for (auto& entry : charts_) entry.second.plots.clear();
}

QString ViewWindows::chart_at(QPointF pos) const {
  for (const auto& [name, state] : charts_) {
    for (const QRectF& plot : state.plots) {
      if (plot.contains(pos)) return name;
    }
  }
  return {};
}

bool ViewWindows::zoom_at(QPointF pos, double factor) {
  State* state = find(chart_at(pos));
  if (state == nullptr) return false;
  const QRectF plot =
      *std::ranges::find_if(state->plots, [pos](const QRectF& p) { return p.contains(pos); });
  const chart::Range& w = state->window;
  const double at = (pos.x() - plot.left()) / plot.width();  // 0 at the left edge, 1 at the right
  const double value = w.min + at * w.span();
  const double span = std::max(w.span() * factor, std::min(state->min_span, state->full.span()));
  const double min = value - at * span;
  // Kept inside the full range by moving, so the value under the mouse stays where it is
  // except at the ends.
  settle(*state, {min, min + span});
  return true;
}

bool ViewWindows::pan(const QString& id, qreal dx) {
  State* state = find(id);
  if (state == nullptr || !state->zoomed || state->plots.empty()) return false;
  const chart::Range before = state->window;
  const double shift = -dx / state->plots.front().width() * before.span();
  settle(*state, {before.min + shift, before.max + shift});
  return state->window.min != before.min;
}

bool ViewWindows::zoomed(const QString& id) const {
  const State* state = find(id);
  return state != nullptr && state->zoomed;
}

bool ViewWindows::any_zoomed() const {
  return std::ranges::any_of(charts_, [](const auto& entry) { return entry.second.zoomed; });
}

void ViewWindows::reset() {
  for (auto& entry : charts_) {
    entry.second.zoomed = false;
    entry.second.window = entry.second.full;
  }
}

chart::Range ViewWindows::shown(const QString& id) const {
  const State* state = find(id);
  return state != nullptr ? state->window : chart::Range{};
}

QRectF ViewWindows::plot(const QString& id) const {
  const State* state = find(id);
  return state != nullptr && !state->plots.empty() ? state->plots.front() : QRectF();
}

}  // namespace servescope::widgets
