// The line fits the measures use: robust and least-squares slopes, and what a size sweep's
// line implies about bandwidth and arithmetic rate.
#include <algorithm>

#include "app/gui/lesson_ui/measure_reader.h"
#include "engine/telemetry/records.h"

namespace servescope::gui {

namespace {

// The least-squares slope of decode time (ms) against `work` per token, inverted: work per ms.
// nullopt with fewer than two sizes or a slope <= 0.
std::optional<double> fitted_work_per_ms(const std::vector<SizeSweepPoint>& points,
                                         double (*work)(const SizeSweepPoint&)) {
  std::vector<std::pair<double, double>> xy;
  for (const SizeSweepPoint& p : points) xy.emplace_back(work(p), p.decode_ms_per_token);
  const std::optional<double> ms_per_work = least_squares_slope(xy);
  if (!ms_per_work || *ms_per_work <= 0.0) return std::nullopt;
  return 1.0 / *ms_per_work;
}

}  // namespace

std::optional<double> thirds_slope(std::vector<std::pair<double, double>> xy) {
  if (xy.size() < 3) return std::nullopt;
  std::ranges::sort(xy);
  const size_t third = xy.size() / 3;
  const auto median_of = [](std::vector<double> v) {
    std::ranges::nth_element(v, v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2));
    return v[v.size() / 2];
  };
  const auto part = [&](size_t from, size_t to) {
    std::vector<double> xs;
    std::vector<double> ys;
    for (size_t i = from; i < to; ++i) {
      xs.push_back(xy[i].first);
      ys.push_back(xy[i].second);
    }
    return std::pair{median_of(xs), median_of(ys)};
  };
  const auto [x0, y0] = part(0, third);
  const auto [x1, y1] = part(xy.size() - third, xy.size());
  if (x1 <= x0) return std::nullopt;
  return (y1 - y0) / (x1 - x0);
}

std::optional<double> least_squares_slope(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 2) return std::nullopt;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (const auto& [x, y] : xy) {
    mean_x += x;
    mean_y += y;
  }
  const auto n = static_cast<double>(xy.size());
  mean_x /= n;
  mean_y /= n;
  double sxy = 0.0;
  double sxx = 0.0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mean_x) * (y - mean_y);
    sxx += (x - mean_x) * (x - mean_x);
  }
  if (sxx <= 0.0) return std::nullopt;
  return sxy / sxx;
}

std::optional<DecodeStepMeans> mean_decode_step(const std::deque<telemetry::StepRecord>& steps) {
  double weight_bytes = 0.0;
  double flops_per_token = 0.0;
  int64_t count = 0;
  for (const telemetry::StepRecord& s : steps) {
    if (!telemetry::is_decode_step(s)) continue;
    weight_bytes += static_cast<double>(s.weight_bytes_read);
    flops_per_token += s.flops / static_cast<double>(s.decode_tokens);
    ++count;
  }
  if (count == 0) return std::nullopt;
  return DecodeStepMeans{weight_bytes / static_cast<double>(count),
                         flops_per_token / static_cast<double>(count)};
}

std::optional<double> fitted_bandwidth_gbs(const std::vector<SizeSweepPoint>& points) {
  const auto bytes_per_ms = fitted_work_per_ms(
      points, [](const SizeSweepPoint& p) { return static_cast<double>(p.weight_bytes); });
  if (!bytes_per_ms) return std::nullopt;
  return *bytes_per_ms / 1e6;  // bytes per ms / 1e6 = GB/s
}

std::optional<double> fitted_gflop_per_s(const std::vector<SizeSweepPoint>& points) {
  const auto flops_per_ms =
      fitted_work_per_ms(points, [](const SizeSweepPoint& p) { return p.decode_flops_per_token; });
  if (!flops_per_ms) return std::nullopt;
  return *flops_per_ms / 1e6;  // FLOPs per ms / 1e6 = GFLOP/s
}

}  // namespace servescope::gui
