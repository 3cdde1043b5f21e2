#include "tests/widgets/synthetic_snapshots.h"

#include <algorithm>
#include <array>

namespace servescope::widgets::testing {

PhasesSnapshot synthetic_phases(bool kernels_measured) {
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
  for (int i = 0; i < 90; ++i) add(0, 2, 2);

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
  int64_t prompt;  // prompt tokens, the shared prefix included for requests 1-3
  bool shares_prefix;
};
constexpr std::array<SimRequest, 4> kRequests = {
    {{0, 0, 40, false}, {1, 5, 44, true}, {2, 10, 41, true}, {3, 15, 52, true}}};

int64_t tokens_at(const SimRequest& r, int64_t step) {
  return step < r.start_step ? 0 : r.prompt + (step - r.start_step);
}

int64_t blocks_for(int64_t tokens) { return (tokens + kBlock - 1) / kBlock; }

}  // namespace

KvCacheSnapshot synthetic_kv_cache() {
  KvCacheSnapshot snap;
  snap.block_size = kBlock;
  snap.model = {5, 2, 64, 4.0, QStringLiteral("F32")};
  const double bytes_per_block = 2.0 * 5 * 2 * 64 * 4.0 * kBlock;

  constexpr int64_t kNow = 30;
  for (int64_t step = 0; step <= kNow; ++step) {
    int64_t tokens = 0, blocks = 0;
    bool prefix_counted = false;
    for (const SimRequest& r : kRequests) {
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

  // The pool: each request's blocks in allocation order, a few freed blocks whose prefix is
  // still cached, and the rest free.
  snap.blocks.resize(64);
  size_t next = 0;
  auto place = [&](int64_t owner, int64_t tokens, int32_t refs, int32_t age) {
    for (int64_t left = tokens; left > 0; left -= kBlock) {
      KvBlock& b = snap.blocks[next++];
      b.owner = owner;
      b.tokens_used = int32_t(std::min<int64_t>(left, kBlock));
      b.ref_count = refs;
      if (left <= kBlock) {  // the block being written
        b.last_event = KvBlockEvent::kWrite;
        b.event_age_frames = age;
      }
    }
  };
  place(0, tokens_at(kRequests[0], kNow), 1, 0);
  next += 2;  // freed by an earlier request, prefix still cached
  snap.blocks[next - 2].cached_prefix = true;
  snap.blocks[next - 1].cached_prefix = true;
  snap.blocks[next - 1].last_event = KvBlockEvent::kFree;
  snap.blocks[next - 1].event_age_frames = 18;
  const size_t prefix_first = next;
  place(1, kSharedPrefix, 3, 60);
  snap.blocks[prefix_first].last_event = KvBlockEvent::kPrefixHit;
  snap.blocks[prefix_first].event_age_frames = 8;
  place(1, tokens_at(kRequests[1], kNow) - kSharedPrefix, 1, 3);
  place(2, tokens_at(kRequests[2], kNow) - kSharedPrefix, 1, 6);
  next += 1;
  snap.blocks[next - 1].last_event = KvBlockEvent::kEvict;
  snap.blocks[next - 1].event_age_frames = 30;
  place(3, tokens_at(kRequests[3], kNow) - kSharedPrefix, 1, 1);

  const double allocated = snap.history.back().allocated_bytes;
  snap.layers.assign(5, KvLayerBytes{allocated / 10.0, allocated / 10.0});
  snap.memory = {QStringLiteral("llvmpipe (LLVM 15.0.6, 256 bits)"), 18.4e6, 64.0 * bytes_per_block,
                 2.6e6, 2.0 * 1024 * 1024 * 1024};
  return snap;
}

BatchingSnapshot synthetic_batching(bool with_sweep) {
  struct Sim {
    int64_t arrival_step, prompt, output;
    int64_t produced = 0;
    bool started = false, recompute = false;
    double arrival_ms = 0, first_token_ms = 0, last_token_ms = 0;
  };
  std::vector<Sim> reqs = {{0, 40, 30},  {0, 24, 22},  {3, 60, 18},  {8, 12, 40}, {15, 30, 25},
                           {22, 50, 20}, {30, 20, 30}, {36, 44, 16}, {50, 16, 20}};
  constexpr int kSlots = 4;
  constexpr int64_t kSteps = 80;
  constexpr int64_t kPreemptStep = 40;

  BatchingSnapshot snap;
  snap.slot_count = kSlots;
  snap.policy = QStringLiteral("continuous batching");
  std::vector<int> slot_of(reqs.size(), -1);
  std::vector<int64_t> holder(kSlots, -1);
  std::vector<size_t> queue;
  size_t next_arrival = 0;
  double clock = 0.0;
  for (int64_t step = 0; step < kSteps; ++step) {
    while (next_arrival < reqs.size() && reqs[next_arrival].arrival_step <= step) {
      reqs[next_arrival].arrival_ms = clock;
      queue.push_back(next_arrival++);
    }
    if (step == kPreemptStep) {  // the newest running request gives its slot back
      const int slot = 3;
      const size_t victim = size_t(holder[slot]);
      holder[slot] = -1;
      slot_of[victim] = -1;
      reqs[victim].recompute = true;
      queue.insert(queue.begin(), victim);
    }
    BatchStep bs;
    bs.index = step;
    bs.cells.resize(kSlots);
    int64_t prefill_tokens = 0, decoding = 0;
    for (int slot = 0; slot < kSlots; ++slot) {
      // The preempted request waits at least one step before it comes back.
      if (holder[slot] < 0 && !queue.empty() &&
          !(step == kPreemptStep && reqs[queue.front()].recompute)) {
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
    for (int slot = 0; slot < kSlots; ++slot) {
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
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Sim& r = reqs[i];
    RequestLatency lat;
    lat.request = int64_t(i);
    lat.output_tokens = r.produced;
    lat.finished = r.produced == r.output;
    if (r.produced > 0) lat.ttft_ms = r.first_token_ms - r.arrival_ms;
    if (r.produced > 1) lat.tpot_ms = (r.last_token_ms - r.first_token_ms) / double(r.produced - 1);
    snap.requests.push_back(lat);
  }
  if (with_sweep) {
    for (int64_t b : {1, 2, 4, 8, 16, 32}) {
      const double ms = 4.5 + 0.35 * double(b);
      snap.sweep.push_back({b, double(b) / ms * 1000.0, ms});
    }
  }
  return snap;
}

}  // namespace servescope::widgets::testing
