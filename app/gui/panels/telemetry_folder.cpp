#include "app/gui/panels/telemetry_folder.h"

#include <algorithm>
#include <variant>

#include "engine/telemetry/metrics.h"

namespace servescope::gui {
namespace {

constexpr double kRateWindowMs = 1000.0;

}  // namespace

TelemetryFolder::TelemetryFolder(size_t history) : history_(history), timeline_(history) {}

void TelemetryFolder::reset(const FoldFacts& facts) {
  facts_ = facts;
  counts_ = {};
  steps_.clear();
  requests_.clear();
  kv_events_.clear();
  timeline_ = telemetry::RequestTimeline(history_);
  blocks_.assign(static_cast<size_t>(std::max<int64_t>(facts.kv_blocks_total, 0)), {});
  blocks_used_ = 0;
  written_.clear();
  longest_.clear();
  sequence_kv_.clear();
  released_kv_.clear();
  kv_fill_.clear();
  watched_request_ = -1;
  watched_first_step_ = -1;
  unwatched_samples_.clear();
  own_requests_.clear();
  watched_tokens_.clear();
  recent_tokens_.clear();
  ++revisions_.resets;  // every reader starts again from the empty state
}

void TelemetryFolder::fold(std::span<const telemetry::TelemetryItem> items, double now_ms) {
  for (const telemetry::TelemetryItem& item : items) {
    if (const auto* step = std::get_if<telemetry::StepRecord>(&item)) {
      fold_step(*step, now_ms);
    } else if (const auto* request = std::get_if<telemetry::RequestRecord>(&item)) {
      fold_request(*request);
    } else if (const auto* event = std::get_if<telemetry::KvEvent>(&item)) {
      fold_kv_event(*event, now_ms);
    } else if (const auto* token = std::get_if<telemetry::TokenRecord>(&item)) {
      fold_token(*token);
    } else if (const auto* arrival = std::get_if<telemetry::RequestArrival>(&item)) {
      timeline_.on_arrival(*arrival);
      ++revisions_.arrivals;
    }
  }
  while (!recent_tokens_.empty() && recent_tokens_.front().at_ms < now_ms - kRateWindowMs) {
    recent_tokens_.pop_front();
  }
}

template <typename T>
void TelemetryFolder::keep(std::deque<T>& list, T item) {
  list.push_back(std::move(item));
  while (list.size() > history_) list.pop_front();
}

void TelemetryFolder::fold_step(const telemetry::StepRecord& step, double now_ms) {
  ++counts_.steps;
  counts_.prefill_tokens += step.prefill_tokens;
  counts_.decode_tokens += step.decode_tokens;
  recent_tokens_.push_back({now_ms, step.tokens(), telemetry::step_time_ms(step)});
  for (const telemetry::BatchEntry& entry : step.batch) {
    // Only while it holds blocks: a step's record comes after its KV events.
    if (entry.longest_tokens > 0 && written_.contains(entry.sequence))
      longest_[entry.sequence] = entry.longest_tokens;
  }
  timeline_.on_step(step);
  keep(steps_, step);
  keep(kv_fill_, KvFillPoint{step.step_index, retained_tokens(), kv_bytes_used()});
  ++revisions_.steps;
}

void TelemetryFolder::fold_request(const telemetry::RequestRecord& request) {
  ++counts_.requests;
  timeline_.on_request(request);
  keep(requests_, request);
  ++revisions_.requests;
}

void TelemetryFolder::fold_kv_event(const telemetry::KvEvent& event, double now_ms) {
  using telemetry::KvEventKind;
  ++counts_.kv_events;
  ++counts_.kv_events_by_kind[static_cast<size_t>(event.kind)];
  for (size_t i = 0; i < event.blocks.size(); ++i) {
    const int32_t id = event.blocks[i];
    if (id < 0 || static_cast<size_t>(id) >= blocks_.size()) continue;
    FoldedBlock& block = blocks_[static_cast<size_t>(id)];
    if (event.kind != KvEventKind::kIndex) {  // indexing changes nothing a person sees
      block.last_event = event.kind;
      block.last_event_ms = now_ms;
    }
    switch (event.kind) {
      case KvEventKind::kAllocate:
      case KvEventKind::kAppend:
        if (block.ref_count++ == 0) ++blocks_used_;
        block.owner = event.sequence;
        block.fill = 0;
        block.prefix_shared = false;
        block.cached_prefix = false;
        break;
      case KvEventKind::kPrefixHit:
        if (block.ref_count++ == 0) ++blocks_used_;
        block.owner = event.sequence;
        block.prefix_shared = true;
        break;
      case KvEventKind::kFork:  // in use by the parent already; its owner stays the parent
        if (block.ref_count++ == 0) ++blocks_used_;
        break;
      case KvEventKind::kCopyOnWrite:
        if (i == 0) {  // the shared block: one user fewer, still in use
          if (block.ref_count > 0 && --block.ref_count == 0) --blocks_used_;
        } else {  // the sequence's own copy of its filled slots
          if (block.ref_count++ == 0) ++blocks_used_;
          block.owner = event.sequence;
          block.fill = event.tokens;
          block.prefix_shared = false;
          block.cached_prefix = false;
        }
        break;
      case KvEventKind::kWrite:
        block.fill = std::max(block.fill, event.offset + event.tokens);
        break;
      case KvEventKind::kIndex:
        block.cached_prefix = true;
        break;
      case KvEventKind::kFree:
      case KvEventKind::kPreempt:
        if (block.ref_count > 0 && --block.ref_count == 0) {
          --blocks_used_;
          if (!block.cached_prefix) block.fill = 0;  // nothing reusable is left in it
        }
        break;
      case KvEventKind::kEvict:
        block.cached_prefix = false;
        block.prefix_shared = false;
        if (block.ref_count == 0) block.fill = 0;
        break;
    }
  }
  fold_sequence_kv(event);
  switch (event.kind) {
    case KvEventKind::kPrefixHit:
      written_[event.sequence] = event.tokens;  // the shared blocks' KV is already there
      break;
    case KvEventKind::kFork:
      written_[event.sequence] = event.tokens;
      timeline_.on_fork(event.sequence, event.time_ms);
      break;
    case KvEventKind::kWrite:
      written_[event.sequence] = std::max(written_[event.sequence], event.position + event.tokens);
      break;
    case KvEventKind::kFree:
    case KvEventKind::kPreempt:
      written_.erase(event.sequence);
      longest_.erase(event.sequence);
      break;
    default:
      break;
  }
  if (event.blocks_used_after != blocks_used_) ++counts_.inconsistent_kv_events;
  keep(kv_events_, event);
  ++revisions_.kv_events;
}

void TelemetryFolder::fold_token(const telemetry::TokenRecord& token) {
  ++counts_.tokens;
  // The other samples of the watched request's prompt drew their first tokens from its logits,
  // in its first step: neither those nor their later tokens are watched.
  if (token.output_index == 0 && token.step_index == watched_first_step_ &&
      token.request_id != watched_request_) {
    unwatched_samples_.insert(token.request_id);
    return;
  }
  if (unwatched_samples_.contains(token.request_id)) return;
  if (token.request_id > watched_request_) {
    watched_request_ = token.request_id;
    watched_first_step_ = token.output_index == 0 ? token.step_index : -1;
    watched_tokens_.clear();
    unwatched_samples_.clear();
  }
  if (token.request_id == watched_request_) watched_tokens_.push_back(token);
}

void TelemetryFolder::fold_sequence_kv(const telemetry::KvEvent& event) {
  using telemetry::KvEventKind;
  if (event.sequence < 0) return;
  switch (event.kind) {
    case KvEventKind::kAllocate:
    case KvEventKind::kAppend:
      sequence_kv_[event.sequence].blocks += static_cast<int64_t>(event.blocks.size());
      break;
    case KvEventKind::kPrefixHit:
    case KvEventKind::kFork: {
      SequenceKv& kv = sequence_kv_[event.sequence];
      kv.blocks += static_cast<int64_t>(event.blocks.size());
      kv.tokens_written = std::max(kv.tokens_written, event.tokens);
      break;
    }
    case KvEventKind::kWrite: {
      SequenceKv& kv = sequence_kv_[event.sequence];
      kv.tokens_written = std::max(kv.tokens_written, event.position + event.tokens);
      break;
    }
    case KvEventKind::kFree:
    case KvEventKind::kPreempt: {
      const auto it = sequence_kv_.find(event.sequence);
      if (it == sequence_kv_.end()) break;
      SequenceKv last = it->second;
      last.released = true;
      sequence_kv_.erase(it);
      released_kv_.emplace_back(event.sequence, last);
      if (released_kv_.size() > kReleasedKept) released_kv_.pop_front();
      break;
    }
    default:
      break;
  }
}

std::optional<SequenceKv> TelemetryFolder::sequence_kv(int64_t sequence) const {
  if (const auto it = sequence_kv_.find(sequence); it != sequence_kv_.end()) return it->second;
  for (auto it = released_kv_.rbegin(); it != released_kv_.rend(); ++it) {
    if (it->first == sequence) return it->second;
  }
  return std::nullopt;
}

// Each block in use counts its written slots once, however many sequences share it: the
// tokens the allocated bytes hold.
int64_t TelemetryFolder::retained_tokens() const {
  int64_t tokens = 0;
  for (const FoldedBlock& block : blocks_) tokens += block.ref_count > 0 ? block.fill : 0;
  return tokens;
}

double TelemetryFolder::tokens_per_s(double now_ms) const {
  telemetry::StepTotals totals;
  for (const Arrival& a : recent_tokens_) {
    if (a.at_ms < now_ms - kRateWindowMs) continue;
    ++totals.steps;
    totals.tokens += a.tokens;
    totals.step_ms += a.step_ms;
  }
  return telemetry::throughput_tokens_per_s(totals);
}

std::vector<serving::HeldRequest> TelemetryFolder::held_requests() const {
  std::vector<serving::HeldRequest> held;
  for (const auto& [sequence, written] : written_) {
    const auto longest = longest_.find(sequence);
    held.push_back({sequence, written, longest == longest_.end() ? 0 : longest->second});
  }
  return held;  // a std::map's order: by id
}

}  // namespace servescope::gui
