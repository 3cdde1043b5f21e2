#include "tests/widgets/synthetic_snapshots.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

namespace servescope::widgets::testing {

PhasesSnapshot synthetic_phases(bool kernels_measured, int shared_decode_steps) {
  PhasesSnapshot snap;
  double clock = 1000.0;  // any monotonic origin
  int64_t context = 0;
  auto add = [&](int64_t prefill, int64_t decode, int64_t sequences) {
    StepBar s;
    s.index = static_cast<int64_t>(snap.steps.size());
    context += prefill > 0 ? prefill : 1;
    s.context_tokens = context;
    s.prefill_tokens = prefill;
    s.decode_tokens = decode;
    s.sequences = sequences;
    // Costs per token in the shape of a small model on a CPU: matmul per token, attention per
    // token and context position.
    const double tokens = static_cast<double>(prefill + decode);
    s.matmul_ms = 3.2 + 0.21 * tokens;
    s.attention_ms = 0.15 + 0.0021 * static_cast<double>(context) * tokens;
    s.norm_ms = 0.08 + 0.004 * tokens;
    s.other_ms = 0.4 + 0.01 * tokens;
    s.kernels_measured = kernels_measured;
    s.start_ms = clock;
    s.end_ms = clock + s.matmul_ms + s.attention_ms + s.norm_ms + s.other_ms + 0.3;
    clock = s.end_ms + 0.6;
    snap.steps.push_back(s);
  };
  add(160, 0, 1);
  for (int i = 0; i < 30; ++i) add(0, 1, 1);
  add(48, 1, 2);
  for (int i = 0; i < shared_decode_steps; ++i) add(0, 2, 2);

  double prefill_ms = 0.0, decode_ms = 0.0;
  int64_t prefill_tokens = 0, decode_tokens = 0;
  for (const StepBar& s : snap.steps) {
    const double ms = s.end_ms - s.start_ms;
    if (s.decode_tokens == 0) {
      prefill_ms += ms;
      prefill_tokens += s.prefill_tokens;
    } else if (s.prefill_tokens == 0) {
      decode_ms += ms;
      decode_tokens += s.decode_tokens;
    }
  }
  snap.prefill_tokens_per_s = static_cast<double>(prefill_tokens) / prefill_ms * 1000.0;
  snap.decode_tokens_per_s = static_cast<double>(decode_tokens) / decode_ms * 1000.0;
  return snap;
}

namespace {

constexpr int32_t kBlock = 16;
constexpr int64_t kSharedPrefix = 32;

struct SimRequest {
  int64_t id;
  int64_t start_step;
  int64_t prompt;  // prompt tokens, the shared prefix included where it shares it
  bool shares_prefix;
  int32_t write_age;  // frames since its last block was written
};
constexpr std::array<SimRequest, 4> kRequests = {
    {{0, 0, 40, false, 0}, {1, 5, 44, true, 3}, {2, 10, 41, true, 6}, {3, 15, 52, true, 1}}};

int64_t tokens_at(const SimRequest& r, int64_t step) {
  return step < r.start_step ? 0 : r.prompt + (step - r.start_step);
}

int64_t blocks_for(int64_t tokens) { return (tokens + kBlock - 1) / kBlock; }

// The cache after `now` steps of `requests` in a pool of `pool_blocks` blocks. The pool holds
// each request's blocks in allocation order; the prefix-sharing requests share one copy of
// the prefix (held by the first of them), preceded by two freed blocks whose prefix is still
// cached; one evicted block precedes the last request.
KvCacheSnapshot simulate_kv_cache(std::span<const SimRequest> requests, size_t pool_blocks,
                                  int64_t now) {
  KvCacheSnapshot snap;
  snap.block_size = kBlock;
  snap.model = {5, 2, 64, 4.0, QStringLiteral("F32")};
  const double bytes_per_block = 2.0 * 5 * 2 * 64 * 4.0 * kBlock;

  for (int64_t step = 0; step <= now; ++step) {
    int64_t tokens = 0, blocks = 0;
    bool prefix_counted = false;
    for (const SimRequest& r : requests) {
      const int64_t t = tokens_at(r, step);
      if (t == 0) continue;
      if (r.shares_prefix) {
        // The shared prefix is held once; each request adds its own tail blocks.
        if (!prefix_counted) tokens += kSharedPrefix, blocks += kSharedPrefix / kBlock;
        prefix_counted = true;
        tokens += t - kSharedPrefix;
        blocks += blocks_for(t - kSharedPrefix);
      } else {
        tokens += t;
        blocks += blocks_for(t);
      }
    }
    snap.history.push_back({tokens, double(blocks) * bytes_per_block});
  }

  snap.blocks.resize(pool_blocks);
  size_t next = 0;
  auto place = [&](int64_t owner, int64_t tokens, int32_t refs, int32_t age) {
    for (int64_t left = tokens; left > 0; left -= kBlock) {
      KvBlock& b = snap.blocks[next++];
      b.owner = owner;
      b.fill = int32_t(std::min<int64_t>(left, kBlock));
      b.ref_count = refs;
      if (left <= kBlock) {  // the block being written
        b.last_event = KvBlockEvent::kWrite;
        b.event_age_frames = age;
      }
    }
  };
  const auto sharers = int32_t(std::ranges::count(requests, true, &SimRequest::shares_prefix));
  bool prefix_placed = false;
  for (const SimRequest& r : requests) {
    if (&r == &requests.back()) {
      next += 1;
      snap.blocks[next - 1].last_event = KvBlockEvent::kEvict;
      snap.blocks[next - 1].event_age_frames = 30;
    }
    if (!r.shares_prefix) {
      place(r.id, tokens_at(r, now), 1, r.write_age);
      continue;
    }
    if (!prefix_placed) {
      next += 2;  // freed by an earlier request, prefix still cached
      snap.blocks[next - 2].cached_prefix = true;
      snap.blocks[next - 1].cached_prefix = true;
      snap.blocks[next - 1].last_event = KvBlockEvent::kFree;
      snap.blocks[next - 1].event_age_frames = 18;
      const size_t prefix_first = next;
      place(r.id, kSharedPrefix, sharers, 60);
      snap.blocks[prefix_first].last_event = KvBlockEvent::kPrefixHit;
      snap.blocks[prefix_first].event_age_frames = 8;
      prefix_placed = true;
    }
    place(r.id, tokens_at(r, now) - kSharedPrefix, 1, r.write_age);
  }

  const double allocated = snap.history.back().allocated_bytes;
  snap.layers.assign(5, KvLayerBytes{allocated / 10.0, allocated / 10.0});
  snap.memory = {QStringLiteral("llvmpipe (LLVM 15.0.6, 256 bits)"), 18.4e6,
                 double(pool_blocks) * bytes_per_block, 2.6e6, 2.0 * 1024 * 1024 * 1024};
  return snap;
}

}  // namespace

KvCacheSnapshot synthetic_kv_cache() { return simulate_kv_cache(kRequests, 64, 30); }

KvCacheSnapshot synthetic_kv_cache_class() {
  // Twelve requests of a class (numbers in the hundreds), eight of them sharing the prefix.
  std::vector<SimRequest> requests;
  for (int64_t i = 0; i < 12; ++i) {
    requests.push_back(
        {140 + i, i * 2, 36 + (i * 13) % 40, i % 3 != 0, int32_t((i * 7) % 50)});
  }
  return simulate_kv_cache(requests, 128, 30);
}

namespace {

struct BatchSimRequest {
  int64_t arrival_step, prompt, output;
  int64_t produced = 0;
  bool started = false, recompute = false;
  double arrival_ms = 0, first_token_ms = 0, last_token_ms = 0;
};

// Continuous batching of `reqs` (numbered first_id, first_id + 1, ...) over `slot_count` slots for
// `steps` steps; at `preempt_step` the request in the last slot gives its slot back and is
// recomputed later. Step times: 4.5 ms + 0.35 ms per decoding sequence + 0.09 ms per prefilled
// token.
BatchingSnapshot simulate_batching(std::vector<BatchSimRequest> reqs, int slot_count, int64_t steps,
                                   int64_t preempt_step, int64_t first_id) {
  using Sim = BatchSimRequest;
  BatchingSnapshot snap;
  snap.slot_count = slot_count;
  snap.policy = QStringLiteral("continuous batching");
  std::vector<int> slot_of(reqs.size(), -1);
  std::vector<int64_t> holder(slot_count, -1);
  std::vector<size_t> queue;
  size_t next_arrival = 0;
  double clock = 0.0;
  for (int64_t step = 0; step < steps; ++step) {
    while (next_arrival < reqs.size() && reqs[next_arrival].arrival_step <= step) {
      reqs[next_arrival].arrival_ms = clock;
      queue.push_back(next_arrival++);
    }
    if (step == preempt_step && holder[slot_count - 1] >= 0) {
      // The request in the last slot gives it back.
      const int slot = slot_count - 1;
      const size_t victim = size_t(holder[slot]);
      holder[slot] = -1;
      slot_of[victim] = -1;
      reqs[victim].recompute = true;
      queue.insert(queue.begin(), victim);
    }
    BatchStep bs;
    bs.index = step;
    bs.cells.resize(slot_count);
    int64_t prefill_tokens = 0, decoding = 0;
    for (int slot = 0; slot < slot_count; ++slot) {
      // The preempted request waits at least one step before it comes back.
      if (holder[slot] < 0 && !queue.empty() &&
          !(step == preempt_step && reqs[queue.front()].recompute)) {
        holder[slot] = int64_t(queue.front());
        slot_of[queue.front()] = slot;
        queue.erase(queue.begin());
        Sim& r = reqs[size_t(holder[slot])];
        bs.cells[size_t(slot)] = {holder[slot],
                                  r.recompute ? SlotState::kRecompute : SlotState::kPrefill};
        prefill_tokens += r.prompt + (r.recompute ? r.produced : 0);
        r.started = true;
        r.recompute = false;
        continue;
      }
      if (holder[slot] >= 0) {
        bs.cells[size_t(slot)] = {holder[slot], SlotState::kDecode};
        ++decoding;
      }
    }
    clock += 4.5 + 0.35 * double(decoding) + 0.09 * double(prefill_tokens);
    for (int slot = 0; slot < slot_count; ++slot) {
      const SlotCell& c = bs.cells[size_t(slot)];
      if (c.request < 0) continue;
      Sim& r = reqs[size_t(c.request)];
      if (c.state == SlotState::kRecompute) continue;  // recomputes what it had, no new token
      if (r.produced == 0) r.first_token_ms = clock;
      r.last_token_ms = clock;
      if (++r.produced == r.output) holder[slot] = -1;
    }
    snap.steps.push_back(bs);
  }
  for (BatchStep& step : snap.steps) {  // the simulation numbered requests by their index
    for (SlotCell& cell : step.cells) cell.request += cell.request >= 0 ? first_id : 0;
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Sim& r = reqs[i];
    RequestLatency lat;
    lat.request = first_id + int64_t(i);
    lat.output_tokens = r.produced;
    lat.finished = r.produced == r.output;
    if (r.produced > 0) lat.ttft_ms = r.first_token_ms - r.arrival_ms;
    if (r.produced > 1) lat.tpot_ms = (r.last_token_ms - r.first_token_ms) / double(r.produced - 1);
    snap.requests.push_back(lat);
  }
  return snap;
}

void add_sweep(BatchingSnapshot& snap) {
  for (int64_t b : {1, 2, 4, 8, 16, 32}) {
    const double ms = 4.5 + 0.35 * double(b);
    snap.sweep.push_back({b, double(b) / ms * 1000.0, ms});
  }
}

}  // namespace

BatchingSnapshot synthetic_batching(bool with_sweep) {
  BatchingSnapshot snap = simulate_batching({{0, 40, 30},
                                             {0, 24, 22},
                                             {3, 60, 18},
                                             {8, 12, 40},
                                             {15, 30, 25},
                                             {22, 50, 20},
                                             {30, 20, 30},
                                             {36, 44, 16},
                                             {50, 16, 20}},
                                            4, 80, 40, 0);
  if (with_sweep) add_sweep(snap);
  return snap;
}

BatchingSnapshot synthetic_batching_class(bool with_sweep) {
  // A request every 2 or 3 steps, prompts of 12-72 tokens, 20-60 tokens out.
  std::vector<BatchSimRequest> reqs;
  for (int64_t i = 0; i < 36; ++i)
    reqs.push_back({i * 5 / 2, 12 + (i * 23) % 61, 20 + (i * 17) % 41});
  BatchingSnapshot snap = simulate_batching(std::move(reqs), 16, 180, 90, 127);
  if (with_sweep) add_sweep(snap);
  return snap;
}

}  // namespace servescope::widgets::testing

namespace servescope::widgets::testing {
namespace {

// Appends a stretch that starts where the row's last one ended.
void add_bar(RequestLifeRow& row, LifeStageView stage, double ms, int64_t steps = 0,
             int64_t tokens = 0) {
  const double start = row.bars.empty() ? row.arrival_ms : row.bars.back().end_ms;
  row.bars.push_back({stage, start, start + ms, steps, tokens});
}

}  // namespace

TimelineSnapshot synthetic_timeline(int requests) {
  constexpr double kStepMs = 6.0;
  TimelineSnapshot snap;
  snap.policy = QStringLiteral("continuous batching");
  snap.own_requests = OwnRequests({2});
  for (int i = 0; i < requests; ++i) {
    RequestLifeRow row;
    row.request = i;
    row.arrival_ms = 40.0 * i;
    // Every fourth arrives while the batch is full and waits for a slot.
    add_bar(row, LifeStageView::kQueued, i % 4 == 3 ? 150.0 : 2.0 + (i % 3) * 2.0);
    const int64_t prompt = 20 + (i * 7) % 50;
    for (int64_t done = 0; done < prompt; done += 32) {
      add_bar(row, LifeStageView::kPrefill, 8.0, 1, std::min<int64_t>(32, prompt - done));
    }
    row.first_token_ms = row.bars.back().end_ms - 0.5;
    const int64_t decode_steps = 10 + (i * 5) % 25;
    if (i == 4) {  // preempted after 8 tokens, its 8 + prompt tokens computed again
      add_bar(row, LifeStageView::kDecode, 8 * kStepMs, 8, 8);
      add_bar(row, LifeStageView::kPreempted, 40.0);
      add_bar(row, LifeStageView::kRecompute, 10.0, 1, prompt + 8);
      add_bar(row, LifeStageView::kDecode, double(decode_steps - 9) * kStepMs, decode_steps - 9,
              decode_steps - 9);
    } else {
      add_bar(row, LifeStageView::kDecode, double(decode_steps) * kStepMs, decode_steps, decode_steps);
    }
    row.output_tokens = decode_steps + 1;
    row.ttft_ms = row.first_token_ms - row.arrival_ms;
    row.tpot_ms = (row.bars.back().end_ms - 0.5 - row.first_token_ms) / double(decode_steps);
    row.finished = true;
    row.finish_reason = QStringLiteral("max tokens");
    snap.rows.push_back(std::move(row));
  }
  // The newest two are still running: they end at the engine's latest time.
  snap.now_ms = 40.0 * requests;
  for (size_t k = snap.rows.size() >= 2 ? snap.rows.size() - 2 : 0; k < snap.rows.size(); ++k) {
    RequestLifeRow& row = snap.rows[k];
    row.finished = false;
    row.finish_reason.clear();
    while (row.bars.size() > 1 && row.bars.back().start_ms >= snap.now_ms) row.bars.pop_back();
    row.bars.back().end_ms = std::max(snap.now_ms, row.bars.back().start_ms);
    if (row.first_token_ms > snap.now_ms) {
      row.first_token_ms = -1.0;
      row.ttft_ms = row.tpot_ms = 0.0;
      row.output_tokens = 0;
    }
  }
  return snap;
}

}  // namespace servescope::widgets::testing
