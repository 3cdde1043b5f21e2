#include "engine/compute/cpu_thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "engine/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SERVESCOPE_CPU_RELAX() _mm_pause()
#else
#define SERVESCOPE_CPU_RELAX() ((void)0)
#endif

namespace servescope::compute {
namespace {

// A job is cut into about this many chunks per thread: enough that a preempted thread holds
// back little, few enough that the atomic hand-out costs nothing next to a chunk.
constexpr int64_t kChunksPerThread = 4;

// Polls before sleeping on the futex: about 20-40 microseconds, longer than the gap between two
// products of a decode step (a norm, a rope), shorter than anything a person would notice as
// a busy core.
constexpr int kSpinPolls = 4000;

// Waits until `value` differs from `old`: spins a little, then sleeps.
template <class T>
void wait_while_equal(const std::atomic<T>& value, T old) {
  for (int i = 0; i < kSpinPolls; ++i) {
    if (value.load(std::memory_order_acquire) != old) return;
    SERVESCOPE_CPU_RELAX();
  }
  while (value.load(std::memory_order_acquire) == old) value.wait(old, std::memory_order_acquire);
}

}  // namespace

CpuThreadPool::CpuThreadPool(int threads) {
  if (threads < 1) {
    throw InputError("the CPU backend needs at least 1 thread; got " + std::to_string(threads));
  }
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

CpuThreadPool::~CpuThreadPool() {
  stopping_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

int CpuThreadPool::default_threads() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 1;
  // One entry per physical core: the set of logical CPUs that share it.
  std::set<std::string> cores;
  int logical = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    ++logical;
    std::ifstream siblings("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                           "/topology/thread_siblings_list");
    std::string list;
    cores.insert(std::getline(siblings, list) ? list : std::to_string(cpu));
  }
  return std::max(1, std::min(logical, static_cast<int>(cores.size())));
}

namespace {

constexpr int kChunkBits = 20;
constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;

uint64_t claim_word(uint32_t job, uint64_t chunks, uint64_t next) {
  return (uint64_t{job} << (2 * kChunkBits)) | (chunks << kChunkBits) | next;
}

}  // namespace

void CpuThreadPool::run(int64_t count, int64_t grain, Call call, void* context) {
  if (count <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t per_chunk = threads() * kChunksPerThread;
  const int64_t wanted = (count + per_chunk - 1) / per_chunk;
  const int64_t chunk = (std::max(wanted, grain) + grain - 1) / grain * grain;
  if (workers_.empty() || chunk >= count) {
    call(context, 0, count, 0);
    return;
  }
  const auto chunks = static_cast<uint32_t>((count + chunk - 1) / chunk);  // <= per_chunk
  const uint32_t job_number = ++jobs_started_ & ((1u << 24) - 1);
  Job& job = jobs_[job_number & 1];
  job.call = call;
  job.context = context;
  job.count = count;
  job.chunk = chunk;
  job.done.store(0, std::memory_order_relaxed);
  failure_ = nullptr;
  claim_.store(claim_word(job_number, chunks, 0), std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  work_on_job(0);
  for (uint32_t done = job.done.load(std::memory_order_acquire); done != chunks;
       done = job.done.load(std::memory_order_acquire)) {
    wait_while_equal(job.done, done);
  }
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void CpuThreadPool::work_on_job(int thread) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t chunks = (word >> kChunkBits) & kChunkMask;
    const uint64_t next = word & kChunkMask;
    if (next >= chunks) return;
    if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;
    }
    Job& job = jobs_[(word >> (2 * kChunkBits)) & 1];
    const int64_t begin = static_cast<int64_t>(next) * job.chunk;
    try {
      job.call(job.context, begin, std::min(job.count, begin + job.chunk), thread);
    } catch (...) {
      record_failure();
    }
    if (job.done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) job.done.notify_one();
    word = claim_.load(std::memory_order_acquire);
  }
}

void CpuThreadPool::record_failure() {
  const std::lock_guard lock(failure_mutex_);
  if (!failure_) failure_ = std::current_exception();
}

void CpuThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    wait_while_equal(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_.load(std::memory_order_relaxed)) return;
    work_on_job(thread);
  }
}

}  // namespace servescope::compute
