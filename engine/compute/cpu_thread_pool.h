// A persistent pool of worker threads for the CPU backend's kernels. A decode step of a small
// model is a few dozen products of tens of microseconds each, so threads are started once and,
// between products, spin briefly and then sleep on a futex (std::atomic::wait) instead of
// being created or woken through a mutex per product. The calling thread takes part in every
// job and work is handed out in chunks from one atomic word, so a job never waits for a worker
// that has not started: on a busy machine, where the OS may not run a worker for milliseconds,
// the caller takes the remaining chunks itself and only a chunk a preempted worker already
// holds can delay it.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace servescope::compute {

class CpuThreadPool {
 public:
  // threads >= 1 (1: everything runs on the caller, no worker is started). InputError
  // otherwise.
  explicit CpuThreadPool(int threads);
  ~CpuThreadPool();
  CpuThreadPool(const CpuThreadPool&) = delete;
  CpuThreadPool& operator=(const CpuThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end, thread) for consecutive ranges covering [0, count), each at least
  // `grain` long (except the last) and each on one thread; `thread` in [0, threads()) names the
  // thread, so a body can use per-thread scratch. Returns when every range is done; if a body
  // throws, the first exception is rethrown here after the others finished. Not reentrant: a
  // body must not call parallel_for on the same pool.
  template <class Body>
  void parallel_for(int64_t count, int64_t grain, Body&& body) {
    auto call = [](void* context, int64_t begin, int64_t end, int thread) {
      (*static_cast<Body*>(context))(begin, end, thread);
    };
    run(count, grain, call, &body);
  }

  // The default thread count: the physical cores this process may use (hyper-threads share a
  // core's execution units, which these kernels keep busy).
  static int default_threads();

 private:
  using Call = void (*)(void* context, int64_t begin, int64_t end, int thread);
  // What a job runs. Two slots alternate, so a worker still looking at the previous job's word
  // never reads a slot being filled for the next one.
  struct Job {
    Call call = nullptr;
    void* context = nullptr;
    int64_t count = 0;
    int64_t chunk = 1;
    std::atomic<uint32_t> done{0};  // chunks finished
  };

  void run(int64_t count, int64_t grain, Call call, void* context);
  // Claims and runs chunks of the current job until none are left.
  void work_on_job(int thread);
  void worker_loop(int thread);
  void record_failure();

  std::vector<std::thread> workers_;
  Job jobs_[2];
  uint32_t jobs_started_ = 0;  // caller only
  // The chunk hand-out: job number (24 bits) | chunks (20 bits) | next chunk (20 bits). A
  // claim is a compare-and-swap of the whole word, so a late worker cannot take a chunk of a
  // job other than the one it read.
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint32_t> generation_{
      0};  // bumped once per job (and once to stop): workers sleep on it
  std::atomic<bool> stopping_{false};
  std::mutex failure_mutex_;
  std::exception_ptr failure_;
};

}  // namespace servescope::compute
