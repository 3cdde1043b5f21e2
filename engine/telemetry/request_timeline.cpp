#include "engine/telemetry/request_timeline.h"

#include <algorithm>
#include <iterator>

namespace servescope::telemetry {
namespace {

LifeStage work_stage(SequencePhase phase) {
  switch (phase) {
    case SequencePhase::kPrefill:
      return LifeStage::kPrefill;
    case SequencePhase::kDecode:
      return LifeStage::kDecode;
    case SequencePhase::kRecompute:
      return LifeStage::kRecompute;
  }
  return LifeStage::kPrefill;
}

}  // namespace

RequestLife& RequestTimeline::life(int64_t request, double first_seen_ms) {
  auto [it, added] = lives_.try_emplace(request);
  if (added) {
    it->second.request_id = request;
    it->second.record.request_id = request;
    it->second.record.arrival_ms = first_seen_ms;
    it->second.record.first_scheduled_ms = -1.0;
    running_.insert(request);
    forget_oldest_finished();
  }
  return it->second;
}

void RequestTimeline::begin(RequestLife& life, LifeStretch next) {
  if (!life.stretches.empty()) life.stretches.back().end_ms = next.start_ms;
  next.end_ms = next.start_ms;
  life.stretches.push_back(next);
}

void RequestTimeline::forget_oldest_finished() {
  for (auto it = lives_.begin(); lives_.size() > kept_ && it != lives_.end();) {
    it = it->second.finished ? lives_.erase(it) : std::next(it);
  }
}

void RequestTimeline::advance(double ms) {
  now_ms_ = std::max(now_ms_, ms);
  for (const int64_t id : running_) {
    std::vector<LifeStretch>& stretches = lives_.at(id).stretches;
    if (!stretches.empty()) stretches.back().end_ms = std::max(now_ms_, stretches.back().start_ms);
  }
}

void RequestTimeline::on_arrival(const RequestArrival& arrival) {
  RequestLife& l = life(arrival.request_id, arrival.arrival_ms);
  if (!l.arrival_known && l.stretches.empty()) {  // else seen already
    l.arrival_known = true;
    l.record.prompt_tokens = arrival.prompt_tokens;
    begin(l, {LifeStage::kQueued, arrival.arrival_ms});
  }
  advance(arrival.arrival_ms);
}

void RequestTimeline::on_step(const StepRecord& step) {
  for (const int64_t id : step.preempted) {
    const auto it = lives_.find(id);
    if (it == lives_.end() || it->second.finished) continue;
    begin(it->second, {LifeStage::kPreempted, step.start_ms});
  }
  for (const BatchEntry& entry : step.batch) {
    RequestLife& l = life(entry.sequence, step.start_ms);
    if (l.finished) continue;  // a late record of a request already closed
    const LifeStage stage = work_stage(entry.phase);
    const auto tokens = static_cast<int64_t>(entry.tokens.size());
    // Decode steps merge into one stretch; each prompt chunk keeps its own, to show its size.
    if (stage == LifeStage::kDecode && !l.stretches.empty() &&
        l.stretches.back().stage == LifeStage::kDecode) {
      ++l.stretches.back().steps;
      l.stretches.back().tokens += tokens;
    } else {
      begin(l, {stage, step.start_ms, step.start_ms, 1, tokens});
    }
    if (l.record.first_scheduled_ms < 0.0) l.record.first_scheduled_ms = step.start_ms;
    if (entry.sampled_token >= 0) l.record.token_times_ms.push_back(step.end_ms);
  }
  advance(step.end_ms);
}

void RequestTimeline::on_request(const RequestRecord& request) {
  RequestLife& l = life(request.request_id, request.arrival_ms);
  running_.erase(request.request_id);
  l.record = request;  // the engine's own times replace the steps' approximations
  l.arrival_known = true;
  std::vector<LifeStretch>& s = l.stretches;
  // Its wait from the recorded arrival (a life first seen in a step had none).
  if (s.empty() || s.front().stage != LifeStage::kQueued) {
    const double first_start = s.empty() ? request.finished_ms : s.front().start_ms;
    s.insert(s.begin(), {LifeStage::kQueued, request.arrival_ms, first_start});
  }
  s.front().start_ms = request.arrival_ms;
  if (!l.finished) s.back().end_ms = request.finished_ms;
  l.finished = true;
  advance(request.finished_ms);
}

void RequestTimeline::on_fork(int64_t request, double fork_ms) {
  RequestLife& l = life(request, fork_ms);
  if (l.finished) return;
  begin(l, {LifeStage::kDecode, fork_ms, fork_ms, 0, 0});
  if (l.record.first_scheduled_ms < 0.0) l.record.first_scheduled_ms = fork_ms;
  l.record.token_times_ms.push_back(fork_ms);
  advance(fork_ms);
}

std::vector<const RequestLife*> RequestTimeline::lives(size_t newest) const {
  std::vector<const RequestLife*> out;
  const size_t count = std::min(newest, lives_.size());
  out.reserve(count);
  for (auto it = std::prev(lives_.end(), static_cast<std::ptrdiff_t>(count)); it != lives_.end();
       ++it) {
    out.push_back(&it->second);
  }
  return out;
}

}  // namespace servescope::telemetry
