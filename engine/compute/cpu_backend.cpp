#include "engine/compute/cpu_backend.h"

#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_exact_interleaved.h"
#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/compute/cpu_kquant_dot.h"
#include "engine/compute/cpu_panel_dot.h"
#include "engine/compute/cpu_stored_attention.h"
#include "engine/core/error.h"

namespace servescope::compute {

// Activation memory a step frees is reused by the next: the same shapes come back every layer
// and step, so a prefill does not page-fault and clear fresh pages for each intermediate
// tensor (as a first, cold forward pass otherwise does). Activations are written before they
// are read (as on the Vulkan backend, which does not clear them either), so reused memory is
// not cleared again: that would be a serial pass over megabytes per prefill layer. Buffers
// hand their floats back when they die, possibly after the backend, so the recycler is
// shared with them.
class ActivationRecycler {
 public:
  // n floats: a freed vector big enough (but not wastefully) as it is, else fresh zeros.
  std::vector<float> take(size_t n) {
    std::vector<float> floats;
    {
      const std::lock_guard lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const size_t capacity = it->capacity();
        if (capacity >= n && capacity <= 4 * n + 1024 &&
            (best == free_.end() || capacity < best->capacity())) {
          best = it;
        }
      }
      if (best != free_.end()) {
        floats = std::move(*best);
        free_.erase(best);
        held_ -= floats.capacity();
      }
      out_ += std::max(floats.capacity(), n);  // a fresh vector is sized to n below
      peak_ = std::max(peak_, out_ + held_);
    }
    floats.resize(n);
    return floats;
  }
  void give(std::vector<float>&& floats) {
    const std::lock_guard lock(mutex_);
    out_ -= std::min(out_, floats.capacity());
    if (floats.capacity() == 0 || held_ + floats.capacity() > kMaxHeldFloats) return;
    held_ += floats.capacity();
    free_.push_back(std::move(floats));
  }
  // The most activation memory ever held at once, in use and kept for reuse together.
  size_t peak_floats() {
    const std::lock_guard lock(mutex_);
    return peak_;
  }

 private:
  static constexpr size_t kMaxHeldFloats = size_t{16} << 20;  // 64 MiB
  std::mutex mutex_;
  std::vector<std::vector<float>> free_;
  size_t held_ = 0;  // floats kept for reuse
  size_t out_ = 0;   // floats in live tensors
  size_t peak_ = 0;
};

namespace {

// Host memory: floats for activations, raw GGML bytes for weights.
// Zeroed memory straight from the kernel (an anonymous mapping): a page becomes resident only
// when it is first written.
class ZeroPages {
 public:
  explicit ZeroPages(uint64_t bytes) : size_(std::max<uint64_t>(bytes, 1)) {
    void* pages = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<uint8_t*>(pages);
  }
  ~ZeroPages() { munmap(data_, size_); }
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint64_t size_;
  uint8_t* data_ = nullptr;
};

struct CpuBuffer final : Buffer {
  std::vector<float> floats;
  std::vector<uint8_t> bytes;
  // A KV store's keys or values, on zeroed pages the kernels touch only where a token's row is
  // written: a pool sized by a large budget costs resident memory for the tokens it holds, not
  // for its capacity.
  std::unique_ptr<ZeroPages> kv;
  uint64_t kv_bytes = 0;
  // Rows interleaved 16 at a time (cpu_int8_interleaved.h), not GGML's row after row: the
  // same five block types of a backend with 8-bit activations (for the integer kernels) and of
  // an exact one on AVX-512 (for cpu_exact_interleaved.h's kernels).
  bool interleaved = false;
  std::shared_ptr<ActivationRecycler> recycler;  // activations: where the floats go back
  CpuBuffer() = default;
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;
  ~CpuBuffer() override {
    if (recycler != nullptr) recycler->give(std::move(floats));
  }
};

CpuBuffer& host(const std::shared_ptr<Buffer>& buffer) { return static_cast<CpuBuffer&>(*buffer); }

uint8_t* kv_data(const std::shared_ptr<Buffer>& side) { return host(side).kv->data(); }

float* row_ptr(const Tensor& t, int64_t row) {
  return host(t.buffer).floats.data() + t.offset + row * t.row_stride;
}

const uint8_t* weight_row(const WeightMatrix& w, int64_t row) {
  return host(w.buffer).bytes.data() + row * gguf::row_bytes(w.type, w.cols);
}

// Row `row` of a weight matrix as float32, whichever way it is stored (an embedding look-up).
void read_weight_row(const WeightMatrix& w, int64_t row, float* dst) {
  if (host(w.buffer).interleaved) {
    interleaved_row(w.type, host(w.buffer).bytes.data(), w.cols, row, dst);
  } else if (stored_in_panels(w.type)) {
    panel_row(w.type, host(w.buffer).bytes.data(), w.rows, w.cols, row, dst);
  } else {
    gguf::dequantize_row(w.type, weight_row(w, row), dst, w.cols);
  }
}

// Loops compiled also for AVX-512 and AVX2, picked at run time; products and sums stay
// separate roundings (no contraction into FMAs), so every version gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SERVESCOPE_VECTOR_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#define SERVESCOPE_LANE_INLINE __attribute__((always_inline, optimize("fp-contract=off")))
#elif defined(__x86_64__) && defined(__clang__)
#define SERVESCOPE_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define SERVESCOPE_LANE_INLINE __attribute__((always_inline))
#else
#define SERVESCOPE_VECTOR_CLONES
#define SERVESCOPE_LANE_INLINE
#endif

// e^x in plain float operations that vectorise inside the clones' loops (Cephes' expf:
// x = k ln2 + r, a degree-6 polynomial in r, 2^k from the exponent bits; within 2 ulp of
// std::exp), rounding k by adding 1.5 * 2^23, so every version gives the same bits. x is
// clamped to [-87, 88]: e^-87 stands in for anything smaller.
SERVESCOPE_LANE_INLINE inline float exp_lanes(float x) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  x = x > -87.0f ? x : -87.0f;  // (NaN too: no undefined conversion to int below)
  x = x < 88.0f ? x : 88.0f;
  const float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  return y * std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
}

// o = silu(g) * u = g / (1 + e^-g) * u over n elements.
SERVESCOPE_VECTOR_CLONES void silu_mul_row(const float* g, const float* u, float* o, int64_t n) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t c = 0; c < n; ++c) o[c] = g[c] / (1.0f + exp_lanes(-g[c])) * u[c];
}

// row[t] = e^(row[t] - max) for t < n; returns their sum, taken in 16 partial sums in a fixed
// order (the same whatever the vector width).
SERVESCOPE_VECTOR_CLONES float exp_shifted_sum(float* row, int64_t n, float max) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  constexpr int64_t kLanes = 16;
  float partial[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      row[t + j] = exp_lanes(row[t + j] - max);
      partial[j] += row[t + j];
    }
  }
  float sum = 0.0f;
  for (const float p : partial) sum += p;
  for (; t < n; ++t) {
    row[t] = exp_lanes(row[t] - max);
    sum += row[t];
  }
  return sum;
}

// row[lo..hi) as probabilities: soft-capped (where a cap is set), then a numerically stable
// softmax (the entries outside the range are left as they are).
void softmax_in_place(float* row, int64_t lo, int64_t hi, float softcap) {
  float max_score = -INFINITY;
  for (int64_t t = lo; t < hi; ++t) {
    if (softcap > 0.0f) row[t] = softcap * std::tanh(row[t] / softcap);
    max_score = std::max(max_score, row[t]);
  }
  const float sum = exp_shifted_sum(row + lo, hi - lo, max_score);
  for (int64_t t = lo; t < hi; ++t) row[t] /= sum;
}

// The sum of squares of n floats in double precision, in 8 partial sums in a fixed order (the
// same whatever the vector width): one running sum would be a chain of n dependent additions.
SERVESCOPE_VECTOR_CLONES double sum_of_squares(const float* in, int64_t n) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  constexpr int64_t kLanes = 8;
  double partial[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) partial[j] += double(in[c + j]) * double(in[c + j]);
  }
  double sum = 0.0;
  for (const double p : partial) sum += p;
  for (; c < n; ++c) sum += double(in[c]) * double(in[c]);
  return sum;
}

// Rows of weights dequantised per tile: 64 Ki floats (256 KiB) stays in L2.
constexpr int64_t kTileElements = 1 << 16;

// OpenBLAS (pthreads build) starts its worker threads when the library loads, and they poll
// with sched_yield for a while after start, taking a core from ours; this stops them. Weak:
// absent from other BLAS libraries (and OpenBLAS restarts them should it ever need threads).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

// Prefill products are cut into at least this many weight tiles.
constexpr int64_t kMinTilesPerProduct = 4;

// Tiny products run on the calling thread: waking a worker costs about as much as this many
// multiply-adds (a few microseconds), so a chunk of a threaded product gets at least this much.
constexpr int64_t kMultiplyAddsPerChunk = int64_t{1} << 14;
// Elementwise operations (norms, RoPE, SiLU, adds) give a thread at least this many elements:
// a decode step's few rows stay on the caller, a prefill's rows split over the pool.
constexpr int64_t kElementsPerChunk = int64_t{1} << 13;

double& time_of(telemetry::KernelTimes& times, telemetry::KernelKind kind) {
  switch (kind) {
    case telemetry::KernelKind::kMatmul:
      return times.matmul_ms;
    case telemetry::KernelKind::kAttention:
      return times.attention_ms;
    case telemetry::KernelKind::kNorm:
      return times.norm_ms;
    case telemetry::KernelKind::kOther:
      break;
  }
  return times.other_ms;
}

double steady_ms(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

// Adds the time from its construction to the end of its scope to one kernel class's total and,
// with spans on, appends the operation's span.
class ScopedTimer {
 public:
  ScopedTimer(CpuBackend::Profile& profile, telemetry::KernelKind kind)
      : profile_(profile), kind_(kind), start_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    const auto end = std::chrono::steady_clock::now();
    time_of(profile_.times, kind_) +=
        std::chrono::duration<double, std::milli>(end - start_).count();
    if (profile_.spans_on) {
      profile_.spans.push_back({kind_, profile_.layer, steady_ms(start_), steady_ms(end)});
    }
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  CpuBackend::Profile& profile_;
  telemetry::KernelKind kind_;
  std::chrono::steady_clock::time_point start_;
};

void rms_norm_rows(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  assert(x.rows == out.rows && x.cols == out.cols && weight.cols == x.cols);
  const float* w = row_ptr(weight, 0);
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* in = row_ptr(x, r);
    float* o = row_ptr(out, r);
    const double sum_sq = sum_of_squares(in, x.cols);
    const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq / double(x.cols) + eps));
    for (int64_t c = 0; c < x.cols; ++c) o[c] = in[c] * scale * w[c];
  }
}

void layer_norm_rows(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                     Tensor& out) {
  assert(x.rows == out.rows && x.cols == out.cols && weight.cols == x.cols);
  const float* w = row_ptr(weight, 0);
  const float* b = row_ptr(bias, 0);
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* in = row_ptr(x, r);
    float* o = row_ptr(out, r);
    double mean = 0.0;
    for (int64_t c = 0; c < x.cols; ++c) mean += in[c];
    mean /= double(x.cols);
    double var = 0.0;
    for (int64_t c = 0; c < x.cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    var /= double(x.cols);
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < x.cols; ++c) {
      o[c] = static_cast<float>((in[c] - mean) * inv_std) * w[c] + b[c];
    }
  }
}

void add_rows(Tensor& x, const Tensor& y) {
  assert(x.rows == y.rows && x.cols == y.cols);
  for (int64_t r = 0; r < x.rows; ++r) {
    float* a = row_ptr(x, r);
    const float* b = row_ptr(y, r);
    for (int64_t c = 0; c < x.cols; ++c) a[c] += b[c];
  }
}

}  // namespace

template <class Body>
void CpuBackend::on_row_ranges(int64_t rows, int64_t cols, Body&& body) {
  const int64_t grain = std::max<int64_t>(1, kElementsPerChunk / std::max<int64_t>(1, cols));
  pool_->parallel_for(rows, grain,
                      [&](int64_t begin, int64_t end, int /*thread*/) { body(begin, end); });
}

CpuBackend::CpuBackend(int threads, bool quantised_activations)
    : quantised_activations_(quantised_activations) {
  if (threads < 0) {
    throw InputError("the CPU backend's thread count must be >= 1 (or 0 for the default); got " +
                     std::to_string(threads));
  }
  pool_ =
      std::make_unique<CpuThreadPool>(threads == 0 ? CpuThreadPool::default_threads() : threads);
  recycler_ = std::make_shared<ActivationRecycler>();
  // Sized for the largest tile now, at load, rather than grown inside the first prefill.
  dequantize_scratch_.assign(static_cast<size_t>(pool_->threads()),
                             std::vector<float>(static_cast<size_t>(kTileElements)));
  attention_scratch_.resize(static_cast<size_t>(pool_->threads()));
  // The pool splits products; OpenBLAS threads on top of it would oversubscribe the cores.
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
  warm_up_blas();
}

void CpuBackend::warm_up_blas() {
  // OpenBLAS takes its packing buffers from the OS on a thread's first sgemm and touches their
  // pages as products of a prefill's size first fill them; one such product on every thread
  // here (128 tokens x 128 rows x 512, ~0.1 ms), at load, keeps those page faults out of the
  // first prefill. Each chunk waits (up to 10 ms) until every thread has one, so a worker not
  // yet running does not leave its chunk to the caller.
  constexpr int64_t n = 128;
  constexpr int64_t k = 512;
  const std::vector<float> ones(static_cast<size_t>(n * k), 1.0f);
  std::atomic<int> started{0};
  pool_->parallel_for(pool_->threads(), 1, [&](int64_t, int64_t, int /*thread*/) {
    started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    while (started.load() < pool_->threads() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    std::vector<float> product(static_cast<size_t>(n * n));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, k, 1.0f, ones.data(), k, ones.data(),
                k, 0.0f, product.data(), n);
  });
}

telemetry::KernelTimes CpuBackend::take_kernel_times() { return std::exchange(profile_.times, {}); }

bool CpuBackend::set_kernel_spans(bool on) {
  profile_.spans_on = on;
  profile_.spans.clear();
  return true;
}

std::vector<telemetry::KernelSpan> CpuBackend::take_kernel_spans() {
  return std::exchange(profile_.spans, {});
}

uint64_t CpuBackend::working_bytes() const {
  size_t floats = recycler_->peak_floats();
  for (const std::vector<float>& tile : dequantize_scratch_) floats += tile.capacity();
  for (const AttentionScratch& a : attention_scratch_) {
    floats += a.keys.capacity() + a.values.capacity() + a.scores.capacity();
  }
  return floats * sizeof(float) + quantised_x_.capacity() * sizeof(ActivationBlock) +
         block_offsets_.capacity() * sizeof(int32_t);
}

Tensor CpuBackend::create_tensor(int64_t rows, int64_t cols, BufferPurpose purpose) {
  auto buffer = std::make_shared<CpuBuffer>();
  const auto n = static_cast<size_t>(rows * cols);
  if (purpose == BufferPurpose::kActivations) {
    buffer->floats = recycler_->take(n);
    buffer->recycler = recycler_;
  } else {
    buffer->floats.assign(n, 0.0f);
  }
  return Tensor{buffer, 0, rows, cols, cols};
}

KvStore CpuBackend::create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) {
  check_kv_store_shape(type, slots, kv_dim);
  const uint64_t bytes = gguf::row_bytes(type, kv_dim) * static_cast<uint64_t>(slots);
  auto side = [bytes] {
    auto buffer = std::make_shared<CpuBuffer>();
    buffer->kv = std::make_unique<ZeroPages>(bytes);
    buffer->kv_bytes = bytes;
    return buffer;
  };
  return KvStore{side(), side(), type, slots, kv_dim};
}

WeightMatrix CpuBackend::upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                                       std::span<const uint8_t> data) {
  assert(data.size() == gguf::row_bytes(type, cols) * static_cast<uint64_t>(rows));
  auto buffer = std::make_shared<CpuBuffer>();
  if (quantised_activations_ ? has_interleaved_kernel(type) : has_exact_interleaved_kernel(type)) {
    buffer->bytes = interleave_rows(type, data.data(), rows, cols);
    buffer->interleaved = true;
  } else if (stored_in_panels(type)) {
    buffer->bytes = pack_panels(type, rows, cols, data.data());
  } else {
    buffer->bytes.assign(data.begin(), data.end());
  }
  return WeightMatrix{buffer, type, rows, cols};
}

Tensor CpuBackend::upload_vector(std::span<const float> values) {
  Tensor t = create_tensor(1, static_cast<int64_t>(values.size()), BufferPurpose::kWeights);
  write(t, values);
  return t;
}

void CpuBackend::write(Tensor& dst, std::span<const float> values) {
  assert(static_cast<int64_t>(values.size()) == dst.size());
  for (int64_t r = 0; r < dst.rows; ++r) {
    std::memcpy(row_ptr(dst, r), values.data() + r * dst.cols, sizeof(float) * dst.cols);
  }
}

std::vector<float> CpuBackend::read(const Tensor& src) {
  std::vector<float> out(static_cast<size_t>(src.size()));
  for (int64_t r = 0; r < src.rows; ++r) {
    std::memcpy(out.data() + r * src.cols, row_ptr(src, r), sizeof(float) * src.cols);
  }
  return out;
}

std::vector<uint8_t> CpuBackend::read_kv_bytes(const KvStore& store, bool values) {
  const CpuBuffer& side = host(values ? store.values : store.keys);
  return std::vector<uint8_t>(side.kv->data(), side.kv->data() + side.kv_bytes);
}

void CpuBackend::embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  assert(out.rows == static_cast<int64_t>(ids.size()) && out.cols == table.cols);
  for (const int32_t id : ids) {
    if (id < 0 || id >= table.rows) {
      throw InputError("token id " + std::to_string(id) + " is outside the table of " +
                       std::to_string(table.rows) + " rows");
    }
  }
  on_row_ranges(out.rows, out.cols, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      read_weight_row(table, ids[static_cast<size_t>(i)], row_ptr(out, i));
    }
  });
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    Tensor out_rows = out.row_range(begin, end - begin);
    rms_norm_rows(x.row_range(begin, end - begin), weight, eps, out_rows);
  });
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                            Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    Tensor out_rows = out.row_range(begin, end - begin);
    layer_norm_rows(x.row_range(begin, end - begin), weight, bias, eps, out_rows);
  });
}

// The fusions are the plain operations one after the other, timed as one operation of the
// class the Vulkan backend's fused kernel has, so both backends' spans have the same kinds.
void CpuBackend::add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                              Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    Tensor x_rows = x.row_range(begin, end - begin);
    Tensor out_rows = out.row_range(begin, end - begin);
    add_rows(x_rows, y.row_range(begin, end - begin));
    rms_norm_rows(x_rows, weight, eps, out_rows);
  });
}

void CpuBackend::add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight,
                                const Tensor& bias, float eps, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    Tensor x_rows = x.row_range(begin, end - begin);
    Tensor out_rows = out.row_range(begin, end - begin);
    add_rows(x_rows, y.row_range(begin, end - begin));
    layer_norm_rows(x_rows, weight, bias, eps, out_rows);
  });
}

void CpuBackend::matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kMatmul);
  assert(x.cols == w.cols && out.cols == w.rows && out.rows == x.rows);
  const bool interleaved = host(w.buffer).interleaved;
  if (interleaved && quantised_activations_) {
    matmul_on_interleaved(x, w, out);
  } else if (interleaved && x.rows <= kMaxRowsForRowKernels) {
    matmul_exact_on_interleaved(x, w, out);
  } else if (stored_in_panels(w.type)) {
    matmul_on_panels(x, w, out);
  } else if (x.rows <= kMaxRowsForRowKernels) {
    matmul_on_rows(x, w, out);
  } else {
    matmul_on_tiles(x, w, out);
  }
  if (bias != nullptr) {
    const float* b = row_ptr(*bias, 0);
    on_row_ranges(out.rows, out.cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* o = row_ptr(out, r);
        for (int64_t c = 0; c < out.cols; ++c) o[c] += b[c];
      }
    });
  }
}

void CpuBackend::matmul_on_rows(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  if (x.rows == 0 || w.cols == 0) return;
  const uint64_t stride = gguf::row_bytes(w.type, w.cols);
  const uint8_t* rows = host(w.buffer).bytes.data();
  const RowDotTokens dot = row_dot_tokens_for(w.type);
  const RowsDotTokens dot_rows = rows_dot_tokens_for(w.type);
  const float* in = row_ptr(x, 0);
  float* first_out = row_ptr(out, 0);
  const int64_t grain = std::max<int64_t>(8, kMultiplyAddsPerChunk / (w.cols * x.rows));
  pool_->parallel_for(w.rows, grain, [&](int64_t begin, int64_t end, int /*thread*/) {
    if (dot_rows != nullptr) {
      dot_rows(rows + static_cast<uint64_t>(begin) * stride, stride, end - begin, in, x.row_stride,
               x.rows, w.cols, first_out + begin, out.row_stride);
      return;
    }
    for (int64_t r = begin; r < end; ++r) {
      dot(rows + static_cast<uint64_t>(r) * stride, in, x.row_stride, x.rows, w.cols, first_out + r,
          out.row_stride);
    }
  });
}

void CpuBackend::matmul_on_panels(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  if (x.rows == 0 || w.cols == 0) return;
  const PanelKernel kernel = panel_kernel_for(w.type);
  const uint8_t* panels = host(w.buffer).bytes.data();
  const PanelLayout layout = panel_layout(w.type, w.rows, w.cols);
  // Whole blocks per chunk (a block's panels go four at a time), two for a lone token (which
  // streams two blocks at once).
  constexpr int64_t kPanelsPerBlock = kPanelBlockRows / kPanelRows;
  const int64_t min_panels = (x.rows == 1 ? 2 : 1) * kPanelsPerBlock;
  const int64_t grain =
      std::max<int64_t>(min_panels, kMultiplyAddsPerChunk / (kPanelRows * w.cols * x.rows) /
                                        kPanelsPerBlock * kPanelsPerBlock);
  pool_->parallel_for(layout.panels(), grain, [&](int64_t begin, int64_t end, int /*thread*/) {
    kernel(panels, w.rows, w.cols, begin, end, row_ptr(x, 0), x.row_stride, x.rows, row_ptr(out, 0),
           out.row_stride);
  });
}

void CpuBackend::quantise_tokens(const Tensor& x) {
  const int64_t blocks = x.cols / gguf::kQuantBlock;  // these types' rows are whole blocks
  quantised_x_.resize(static_cast<size_t>(x.rows * blocks));
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      quantize_activations(row_ptr(x, t), x.cols, quantised_x_.data() + t * blocks);
    }
  });
}

void CpuBackend::matmul_on_interleaved(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  if (x.rows == 0 || w.cols == 0) return;
  quantise_tokens(x);
  const int64_t blocks = w.cols / gguf::kQuantBlock;
  block_offsets_.resize(static_cast<size_t>(x.rows * blocks));
  for (size_t i = 0; i < block_offsets_.size(); ++i) {
    block_offsets_[i] = interleaved_block_offset(w.type, quantised_x_[i]);
  }
  const InterleavedKernel kernel = interleaved_kernel(w.type);
  const uint8_t* packed = host(w.buffer).bytes.data();
  // Chunks of 4x the usual multiply-adds: this kernel does about that many more per cycle.
  on_row_groups(w, x.rows, 4, [&](int64_t first_row, int64_t end_row) {
    kernel(packed, w.cols, first_row, end_row, quantised_x_.data(), block_offsets_.data(), x.rows,
           row_ptr(out, 0), out.row_stride);
  });
}

template <class Body>
void CpuBackend::on_row_groups(const WeightMatrix& w, int64_t tokens, int64_t chunk_factor,
                               Body&& body) {
  const int64_t groups = (w.rows + kInterleavedRows - 1) / kInterleavedRows;
  // A decode's products are a few microseconds, so each hand-out must stay worth its cost.
  const int64_t grain = std::max<int64_t>(
      1, chunk_factor * kMultiplyAddsPerChunk / (kInterleavedRows * w.cols * tokens));
  pool_->parallel_for(groups, grain, [&](int64_t begin, int64_t end, int /*thread*/) {
    body(begin * kInterleavedRows, std::min(w.rows, end * kInterleavedRows));
  });
}

void CpuBackend::matmul_exact_on_interleaved(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  if (x.rows == 0 || w.cols == 0) return;
  prepared_x_.resize(static_cast<size_t>(x.rows * exact_prepared_floats(w.type, w.cols)));
  prepare_exact_activations(w.type, row_ptr(x, 0), x.row_stride, x.rows, w.cols,
                            prepared_x_.data());
  const ExactInterleavedKernel kernel = exact_interleaved_kernel(w.type);
  const uint8_t* packed = host(w.buffer).bytes.data();
  // Chunks of twice the usual multiply-adds: about this kernel's speed over the row kernels'.
  on_row_groups(w, x.rows, 2, [&](int64_t first_row, int64_t end_row) {
    kernel(packed, w.cols, first_row, end_row, prepared_x_.data(), x.rows, row_ptr(out, 0),
           out.row_stride);
  });
}

void CpuBackend::multiply_tile_on_panels(const Tensor& x, const WeightMatrix& w, int64_t r0,
                                         int64_t rows, std::vector<float>& scratch, Tensor& out) {
  const PanelLayout layout = panel_layout(gguf::GgmlType::F32, rows, w.cols);
  scratch.resize(layout.bytes() / sizeof(float));
  if (host(w.buffer).interleaved) {
    interleaved_to_panels(w.type, host(w.buffer).bytes.data(), w.cols, r0, rows, scratch.data());
  } else {
    dequantize_to_panels(w.type, weight_row(w, r0), gguf::row_bytes(w.type, w.cols), rows, w.cols,
                         scratch.data());
  }
  panel_kernel_for(gguf::GgmlType::F32)(reinterpret_cast<const uint8_t*>(scratch.data()), rows,
                                        w.cols, 0, layout.panels(), row_ptr(x, 0), x.row_stride,
                                        x.rows, row_ptr(out, 0) + r0, out.row_stride);
}

void CpuBackend::multiply_tile_with_sgemm(const Tensor& x, const WeightMatrix& w, int64_t r0,
                                          int64_t rows, std::vector<float>& scratch, Tensor& out) {
  scratch.resize(static_cast<size_t>(rows * w.cols));
  // (Interleaved weights never come here: the exact path interleaves only on AVX-512 CPUs,
  // whose tiles go to multiply_tile_on_panels.)
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row_fast(w.type, weight_row(w, r0 + r), scratch.data() + r * w.cols, w.cols);
  }
  // out[:, r0:r0+rows] = x * tile^T
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(x.rows),
              static_cast<blasint>(rows), static_cast<blasint>(w.cols), 1.0f, row_ptr(x, 0),
              static_cast<blasint>(x.row_stride), scratch.data(), static_cast<blasint>(w.cols),
              0.0f, row_ptr(out, 0) + r0, static_cast<blasint>(out.row_stride));
}

void CpuBackend::matmul_on_tiles(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  // At least kMinTilesPerProduct tiles, as many more as keep a tile within kTileElements, all
  // of about the same size (whole 16-row strips), so that threads finish together (1344 rows:
  // six of 224, not five of 256 and one of 64); tiles do not depend on the thread count, so
  // neither does any result.
  const int64_t max_rows = std::max<int64_t>(1, kTileElements / w.cols);
  const int64_t wanted_tiles = std::max(kMinTilesPerProduct, (w.rows + max_rows - 1) / max_rows);
  const int64_t even_rows = (w.rows + wanted_tiles - 1) / wanted_tiles;
  const int64_t tile_rows =
      std::max<int64_t>(1, std::min(w.rows, std::max<int64_t>(16, (even_rows + 15) / 16 * 16)));
  const int64_t tiles = (w.rows + tile_rows - 1) / tile_rows;
  // The AVX-512 panel kernel multiplies a dequantised tile twice as fast as OpenBLAS's sgemm
  // here (`servescope-cpu-products-bench`, 1 thread, 128 tokens: Q8_0 and Q4_0 903-916 against
  // 1775-1791 us a layer); the AVX2 one is about 5% slower than OpenBLAS's AVX2 sgemm.
  static const bool tiles_on_panels = cpu_has_avx512();
  pool_->parallel_for(tiles, 1, [&](int64_t first_tile, int64_t end_tile, int thread) {
    std::vector<float>& scratch = dequantize_scratch_[static_cast<size_t>(thread)];
    for (int64_t tile_index = first_tile; tile_index < end_tile; ++tile_index) {
      const int64_t r0 = tile_index * tile_rows;
      const int64_t rows = std::min(tile_rows, w.rows - r0);
      // (F32 and F16 are stored in panels: matmul_on_panels.)
      if (tiles_on_panels) {
        multiply_tile_on_panels(x, w, r0, rows, scratch, out);
      } else {
        multiply_tile_with_sgemm(x, w, r0, rows, scratch, out);
      }
    }
  });
}

namespace {

// One head's pairs turned by their angles (cos, sin interleaved per pair).
SERVESCOPE_VECTOR_CLONES void rotate_head(float* head, const float* angles, int64_t pairs,
                                          int64_t stride, int64_t partner) {
  for (int64_t i = 0; i < pairs; ++i) {
    const float cos_t = angles[2 * i];
    const float sin_t = angles[2 * i + 1];
    float* first = head + stride * i;
    const float a = first[0];
    const float b = first[partner];
    first[0] = a * cos_t - b * sin_t;
    first[partner] = a * sin_t + b * cos_t;
  }
}

}  // namespace

void CpuBackend::rotate_pairs(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
                              const RopeSpec& rope) {
  assert(static_cast<int64_t>(positions.size()) == x.rows && x.cols % head_dim == 0);
  const int64_t pairs = head_dim / 2;
  RopeTable& table = rope_table_;
  if (table.head_dim != head_dim || !(table.spec == rope)) table = RopeTable{head_dim, rope, {}};
  // cos and sin of every (position, pair) angle, computed once per position (a decode step
  // would otherwise take 3 libm calls per pair per layer, twice).
  const int32_t longest =
      positions.empty() ? 0 : *std::max_element(positions.begin(), positions.end());
  // New positions are filled in parallel (a first prefill's cos and sin cost as much as its
  // RoPE), the power of each pair taken once.
  const auto known = static_cast<int64_t>(table.cos_sin.size()) / (2 * pairs);
  if (longest >= known) {
    // RopeSpec::angle(p, i, head_dim), the same operations in the same order.
    std::vector<double> power(static_cast<size_t>(pairs));
    std::vector<double> factor(static_cast<size_t>(pairs), 1.0);
    for (int64_t i = 0; i < pairs; ++i) {
      power[static_cast<size_t>(i)] =
          std::pow(double(rope.freq_base), -2.0 * double(i) / double(head_dim));
      if (!rope.freq_factors.empty()) {
        factor[static_cast<size_t>(i)] = double(rope.freq_factors[static_cast<size_t>(i)]);
      }
    }
    table.cos_sin.resize(static_cast<size_t>((longest + 1) * 2 * pairs));
    on_row_ranges(longest + 1 - known, 16 * pairs, [&](int64_t begin, int64_t end) {
      for (int64_t p = known + begin; p < known + end; ++p) {
        for (int64_t i = 0; i < pairs; ++i) {
          const double theta = double(p) * double(rope.freq_scale) * power[static_cast<size_t>(i)] /
                               factor[static_cast<size_t>(i)];
          float* cos_sin = table.cos_sin.data() + (p * pairs + i) * 2;
          cos_sin[0] = static_cast<float>(std::cos(theta));
          cos_sin[1] = static_cast<float>(std::sin(theta));
        }
      }
    });
  }
  // Normal mode turns (2i, 2i+1), neox mode (i, i + d/2).
  const int64_t stride = rope.neox ? 1 : 2;
  const int64_t partner = rope.neox ? pairs : 1;
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = row_ptr(x, r);
      const float* angles = table.cos_sin.data() + positions[static_cast<size_t>(r)] * 2 * pairs;
      // Head by head, so that the pairs are read in memory order (the loop vectorises).
      for (int64_t head = 0; head < x.cols / head_dim; ++head) {
        rotate_head(row + head * head_dim, angles, pairs, stride, partner);
      }
    }
  });
}

void CpuBackend::rope(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
                      const RopeSpec& rope) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  rotate_pairs(x, head_dim, positions, rope);
}

void CpuBackend::rope_qk(Tensor& q, Tensor& k, int64_t head_dim, std::span<const int32_t> positions,
                         const RopeSpec& rope) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  rotate_pairs(q, head_dim, positions, rope);
  rotate_pairs(k, head_dim, positions, rope);
}

void CpuBackend::gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  assert(src.cols == dst.cols && dst.rows == static_cast<int64_t>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    assert(rows[i] >= 0 && rows[i] < src.rows);
    std::memcpy(row_ptr(dst, static_cast<int64_t>(i)), row_ptr(src, rows[i]),
                sizeof(float) * static_cast<size_t>(src.cols));
  }
}

void CpuBackend::store_kv(const Tensor& keys, const Tensor& values, std::span<const int32_t> slots,
                          KvStore& store) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kAttention);
  assert(keys.rows == static_cast<int64_t>(slots.size()) && keys.cols == store.kv_dim);
  const uint64_t stride = gguf::row_bytes(store.type, store.kv_dim);
  // New tokens have distinct slots, so rows can be stored from different threads.
  on_row_ranges(keys.rows, 2 * keys.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const auto slot = static_cast<uint64_t>(slots[static_cast<size_t>(r)]);
      assert(slot < static_cast<uint64_t>(store.slots));
      quantize_row_fast(store.type, row_ptr(keys, r), kv_data(store.keys) + slot * stride,
                        store.kv_dim);
      quantize_row_fast(store.type, row_ptr(values, r), kv_data(store.values) + slot * stride,
                        store.kv_dim);
    }
  });
}

void CpuBackend::copy_kv_slots(KvStore& store, int32_t from, int32_t to, int32_t count) {
  check_kv_slot_copy(store, from, to, count);
  const uint64_t stride = gguf::row_bytes(store.type, store.kv_dim);
  for (const std::shared_ptr<Buffer>* side : {&store.keys, &store.values}) {
    uint8_t* data = kv_data(*side);
    std::memcpy(data + static_cast<uint64_t>(to) * stride,
                data + static_cast<uint64_t>(from) * stride, static_cast<uint64_t>(count) * stride);
  }
}

namespace {

// Dequantises the rows of `slots` from one side (keys or values) of a store into dst.
void gather_kv_rows(const KvStore& store, const std::shared_ptr<Buffer>& side,
                    std::span<const int32_t> slots, std::vector<float>& dst) {
  const uint64_t stride = gguf::row_bytes(store.type, store.kv_dim);
  dst.resize(slots.size() * static_cast<size_t>(store.kv_dim));
  for (size_t t = 0; t < slots.size(); ++t) {
    dequantize_row_fast(store.type, kv_data(side) + slots[t] * stride,
                        dst.data() + t * static_cast<size_t>(store.kv_dim), store.kv_dim);
  }
}

}  // namespace

namespace {

// A sequence with at least this many new query rows (prefill) takes the tiled attention; fewer
// (decode) the row-by-row one.
constexpr int64_t kMinRowsForTiledAttention = 8;

// Whether one KV head's columns of a stored row can be converted on their own: whole blocks.
bool kv_head_is_separable(const KvStore& store, int64_t head_dim) {
  return store.type != gguf::GgmlType::Q8_0 || head_dim % gguf::kQuantBlock == 0;
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                           const AttentionBatch& batch, Tensor& out, Tensor* weights) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kAttention);
  // The work of this call: per-row work (decode's rows, all heads) and tiles of a prefill's
  // rows (one KV head each); each item is computed whole on one thread, so the split over
  // threads changes no result. A sequence's run of many rows (prefill) is cut into tiles in
  // fixed places counted from the run's start (not from the thread count or the batch).
  struct AttentionWork {
    std::vector<std::pair<int64_t, int64_t>> row_ranges;
    std::vector<AttentionTile> tiles;
  };
  AttentionWork work;
  const bool separable = kv_head_is_separable(store, shape.head_dim);
  for (int64_t begin = 0; begin < q.rows;) {
    int64_t end = begin + 1;
    const int32_t offset = batch.context_offsets[static_cast<size_t>(begin)];
    while (end < q.rows && batch.context_offsets[static_cast<size_t>(end)] == offset) ++end;
    if (separable && end - begin >= kMinRowsForTiledAttention) {
      for (int64_t first = begin; first < end; first += kAttentionTileRows) {
        for (int64_t g = 0; g < shape.n_kv_heads; ++g) {
          work.tiles.push_back({first, std::min(end, first + kAttentionTileRows), g});
        }
      }
    } else {
      work.row_ranges.emplace_back(begin, end);
    }
    begin = end;
  }
  if (work.tiles.empty() && q.rows < pool_->threads() && shape.n_kv_heads > 1 &&
      stored_attention_supported(store.type, shape.head_dim)) {
    // Fewer decode rows than threads (a lone sequence): each row's KV heads split over the
    // threads instead, each head whole on one thread, so no result changes. Batch-1 attention
    // took 3.5-4.6 us a layer of a 0.145 ms step on one thread.
    pool_->parallel_for(q.rows * shape.n_kv_heads, 1, [&](int64_t begin, int64_t end, int thread) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t row = item / shape.n_kv_heads;
        const int64_t kv_head = item % shape.n_kv_heads;
        attend_rows_in_place(q, store, shape, batch, out, weights, row, row + 1, kv_head,
                             kv_head + 1, attention_scratch_[static_cast<size_t>(thread)]);
      }
    });
    return;
  }
  if (work.tiles.empty()) {
    // Query rows are independent (each reads only its own sequence's context), so they split
    // over the threads; rows of one sequence mostly land on one thread and share its gather.
    pool_->parallel_for(q.rows, 1, [&](int64_t begin, int64_t end, int thread) {
      attend_rows(q, store, shape, batch, out, weights, begin, end,
                  attention_scratch_[static_cast<size_t>(thread)]);
    });
    return;
  }
  // A tile costs about its rows' context lengths: the latest (longest) first, so that the short
  // ones fill the gaps at the end.
  std::sort(work.tiles.begin(), work.tiles.end(),
            [&](const AttentionTile& a, const AttentionTile& b) {
              const int32_t pa = batch.positions[static_cast<size_t>(a.end - 1)];
              const int32_t pb = batch.positions[static_cast<size_t>(b.end - 1)];
              return pa != pb ? pa > pb
                              : (a.begin != b.begin ? a.begin < b.begin : a.kv_head < b.kv_head);
            });
  const auto ranges = static_cast<int64_t>(work.row_ranges.size());
  pool_->parallel_for(ranges + static_cast<int64_t>(work.tiles.size()), 1,
                      [&](int64_t begin, int64_t end, int thread) {
                        AttentionScratch& scratch = attention_scratch_[static_cast<size_t>(thread)];
                        for (int64_t item = begin; item < end; ++item) {
                          if (item < ranges) {
                            const auto [first, last] = work.row_ranges[static_cast<size_t>(item)];
                            attend_rows(q, store, shape, batch, out, weights, first, last, scratch);
                          } else {
                            attend_tile(q, store, shape, batch, out, weights,
                                        work.tiles[static_cast<size_t>(item - ranges)], scratch);
                          }
                        }
                      });
}

void CpuBackend::attend_tile(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                             const AttentionBatch& batch, Tensor& out, Tensor* weights,
                             const AttentionTile& tile, AttentionScratch& scratch) {
  const int64_t d = shape.head_dim;
  const int64_t group = shape.n_heads / shape.n_kv_heads;  // query heads per KV head
  const float scale = shape.score_scale();
  const float softcap = shape.softcap;
  const int64_t rows = tile.end - tile.begin;
  const auto n_keys_of = [&](int64_t i) {  // causal: positions 0 ..= the row's own
    return int64_t{batch.positions[static_cast<size_t>(i)]} + 1;
  };
  const auto first_key_of = [&](int64_t i) {  // a sliding window hides the keys further back
    return shape.window > 0 ? std::max<int64_t>(0, n_keys_of(i) - shape.window) : 0;
  };
  // The tile's keys: from the first any row sees to the last any row sees.
  int64_t key_begin = first_key_of(tile.begin);
  int64_t key_end = n_keys_of(tile.begin);
  for (int64_t i = tile.begin + 1; i < tile.end; ++i) {
    key_begin = std::min(key_begin, first_key_of(i));
    key_end = std::max(key_end, n_keys_of(i));
  }
  const int64_t keys = key_end - key_begin;
  // This KV head's keys and values, gathered from their slots into [keys x d] and converted.
  const uint64_t stride = gguf::row_bytes(store.type, store.kv_dim);
  const uint64_t head_offset = gguf::row_bytes(store.type, tile.kv_head * d);
  const int32_t* slots =
      batch.slot_map.data() + batch.context_offsets[static_cast<size_t>(tile.begin)];
  scratch.keys.resize(static_cast<size_t>(keys * d));
  scratch.values.resize(static_cast<size_t>(keys * d));
  for (int64_t t = 0; t < keys; ++t) {
    const uint64_t at = static_cast<uint64_t>(slots[key_begin + t]) * stride + head_offset;
    dequantize_row_fast(store.type, kv_data(store.keys) + at, scratch.keys.data() + t * d, d);
    dequantize_row_fast(store.type, kv_data(store.values) + at, scratch.values.data() + t * d, d);
  }
  std::vector<float>& p = scratch.scores;  // [rows x keys]: scores, then probabilities
  p.resize(static_cast<size_t>(rows * keys));
  for (int64_t h = tile.kv_head * group; h < (tile.kv_head + 1) * group; ++h) {
    // scores = scale * Q_h K^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
                static_cast<blasint>(keys), static_cast<blasint>(d), scale,
                row_ptr(q, tile.begin) + h * d, static_cast<blasint>(q.row_stride),
                scratch.keys.data(), static_cast<blasint>(d), 0.0f, p.data(),
                static_cast<blasint>(keys));
    for (int64_t i = tile.begin; i < tile.end; ++i) {
      float* row = p.data() + (i - tile.begin) * keys;
      // The row's keys are [lo, hi) of the tile's; the others get probability 0.
      const int64_t lo = first_key_of(i) - key_begin;
      const int64_t hi = n_keys_of(i) - key_begin;
      softmax_in_place(row, lo, hi, softcap);
      std::fill(row, row + lo, 0.0f);
      std::fill(row + hi, row + keys, 0.0f);
      if (weights != nullptr) {
        float* captured = row_ptr(*weights, i * shape.n_heads + h);
        std::fill(captured, captured + key_begin + lo, 0.0f);
        std::copy(row + lo, row + hi, captured + key_begin + lo);
      }
    }
    // out_h = P V
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(rows),
                static_cast<blasint>(d), static_cast<blasint>(keys), 1.0f, p.data(),
                static_cast<blasint>(keys), scratch.values.data(), static_cast<blasint>(d), 0.0f,
                row_ptr(out, tile.begin) + h * d, static_cast<blasint>(out.row_stride));
  }
}

namespace {

// out[c] += p * v[c], the value half of attention (a prefill's attention spends about half its
// time here).
SERVESCOPE_VECTOR_CLONES void add_scaled(float* out, const float* v, float p, int64_t d) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t c = 0; c < d; ++c) out[c] += p * v[c];
}

}  // namespace

namespace {

// One KV head of a sequence's stored rows, as the in-place kernels read them.
StoredHead stored_head(const KvStore& store, int64_t head_dim, int64_t kv_head,
                       const int32_t* slots) {
  const uint64_t head_bytes = gguf::row_bytes(store.type, kv_head * head_dim);
  return StoredHead{store.type,
                    kv_data(store.keys) + head_bytes,
                    kv_data(store.values) + head_bytes,
                    gguf::row_bytes(store.type, store.kv_dim),
                    slots,
                    head_dim};
}

}  // namespace

void CpuBackend::attend_rows_in_place(const Tensor& q, const KvStore& store,
                                      const AttentionShape& shape, const AttentionBatch& batch,
                                      Tensor& out, Tensor* weights, int64_t begin, int64_t end,
                                      int64_t first_kv_head, int64_t end_kv_head,
                                      AttentionScratch& scratch) {
  const int64_t d = shape.head_dim;
  const auto group = static_cast<int>(shape.n_heads / shape.n_kv_heads);
  const float scale = shape.score_scale();
  const float softcap = shape.softcap;
  std::vector<float>& p = scratch.scores;  // [group x keys]: scores, then probabilities
  for (int64_t i = begin; i < end; ++i) {
    const int32_t* slots = batch.slot_map.data() + batch.context_offsets[static_cast<size_t>(i)];
    const int64_t n_keys = batch.positions[static_cast<size_t>(i)] + 1;  // causal
    // A sliding window hides the keys more than `window` positions back.
    const int64_t first = shape.window > 0 ? std::max<int64_t>(0, n_keys - shape.window) : 0;
    p.resize(static_cast<size_t>(group * n_keys));
    for (int64_t g = first_kv_head; g < end_kv_head; ++g) {
      const StoredHead head = stored_head(store, d, g, slots);
      // The group's query heads are consecutive in q and out: g * group .. (g + 1) * group - 1.
      const int64_t first_head = g * group;
      stored_key_scores(head, row_ptr(q, i) + first_head * d, group, first, n_keys, scale,
                        p.data());
      for (int h = 0; h < group; ++h) {
        float* row = p.data() + h * n_keys;
        softmax_in_place(row, first, n_keys, softcap);
        if (weights != nullptr) {
          float* captured = row_ptr(*weights, i * shape.n_heads + first_head + h);
          std::fill(captured, captured + first, 0.0f);
          std::copy(row + first, row + n_keys, captured + first);
        }
      }
      stored_value_sum(head, p.data(), group, first, n_keys, row_ptr(out, i) + first_head * d);
    }
  }
}

void CpuBackend::attend_rows(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                             const AttentionBatch& batch, Tensor& out, Tensor* weights,
                             int64_t begin, int64_t end, AttentionScratch& scratch) {
  if (stored_attention_supported(store.type, shape.head_dim)) {
    attend_rows_in_place(q, store, shape, batch, out, weights, begin, end, 0, shape.n_kv_heads,
                         scratch);
    return;
  }
  const int64_t d = shape.head_dim;
  const int64_t kv_dim = store.kv_dim;
  const int64_t group = shape.n_heads / shape.n_kv_heads;  // query heads per KV head
  const float scale = shape.score_scale();
  const float softcap = shape.softcap;
  // q.k in SIMD lanes: one running float sum would be a chain of d dependent additions.
  const RowDot dot_f32 = row_dot_for(gguf::GgmlType::F32);
  std::vector<float>& scores = scratch.scores;
  // Rows of one sequence (consecutive, same offset) share its context: gather and dequantise
  // it once, as long as the longest of those rows needs, for all of them.
  // An F32 store is read in place, through the slots: nothing to convert, so no copy.
  const bool in_place = store.type == gguf::GgmlType::F32;
  const auto* stored_keys = reinterpret_cast<const float*>(kv_data(store.keys));
  const auto* stored_values = reinterpret_cast<const float*>(kv_data(store.values));
  const int32_t* slot_of = nullptr;  // the current sequence's slots (in place)
  const auto key_row = [&](int64_t t) {
    return in_place ? stored_keys + int64_t{slot_of[t]} * kv_dim : scratch.keys.data() + t * kv_dim;
  };
  const auto value_row = [&](int64_t t) {
    return in_place ? stored_values + int64_t{slot_of[t]} * kv_dim
                    : scratch.values.data() + t * kv_dim;
  };
  int32_t gathered_offset = -1;
  for (int64_t i = begin; i < end; ++i) {
    const int32_t offset = batch.context_offsets[static_cast<size_t>(i)];
    const int64_t n_keys = batch.positions[static_cast<size_t>(i)] + 1;  // causal
    slot_of = batch.slot_map.data() + offset;
    if (!in_place && offset != gathered_offset) {
      int64_t longest = n_keys;
      for (int64_t j = i + 1; j < end && batch.context_offsets[static_cast<size_t>(j)] == offset;
           ++j) {
        longest = std::max<int64_t>(longest, batch.positions[static_cast<size_t>(j)] + 1);
      }
      const std::span<const int32_t> slots(batch.slot_map.data() + offset,
                                           static_cast<size_t>(longest));
      gather_kv_rows(store, store.keys, slots, scratch.keys);
      gather_kv_rows(store, store.values, slots, scratch.values);
      gathered_offset = offset;
    }
    scores.resize(static_cast<size_t>(n_keys));
    // A sliding window hides the keys more than `window` positions back.
    const int64_t first = shape.window > 0 ? std::max<int64_t>(0, n_keys - shape.window) : 0;
    for (int64_t h = 0; h < shape.n_heads; ++h) {
      const float* qh = row_ptr(q, i) + h * d;
      const int64_t kv_col = (h / group) * d;
      float max_score = -INFINITY;
      for (int64_t t = first; t < n_keys; ++t) {
        const float* kt = key_row(t) + kv_col;
        float score = dot_f32(reinterpret_cast<const uint8_t*>(kt), qh, d) * scale;
        if (softcap > 0.0f) score = softcap * std::tanh(score / softcap);
        scores[t] = score;
        max_score = std::max(max_score, score);
      }
      // The tiles' vectorised exp over the row's keys: std::exp one key at a time does not
      // vectorise.
      const float sum = exp_shifted_sum(scores.data() + first, n_keys - first, max_score);
      float* oh = row_ptr(out, i) + h * d;
      std::fill(oh, oh + d, 0.0f);
      float* captured = weights != nullptr ? row_ptr(*weights, i * shape.n_heads + h) : nullptr;
      if (captured != nullptr) std::fill(captured, captured + first, 0.0f);
      for (int64_t t = first; t < n_keys; ++t) {
        const float p = scores[t] / sum;
        if (captured != nullptr) captured[t] = p;
        add_scaled(oh, value_row(t) + kv_col, p, d);
      }
    }
  }
}

void CpuBackend::add(Tensor& x, const Tensor& y) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    Tensor x_rows = x.row_range(begin, end - begin);
    add_rows(x_rows, y.row_range(begin, end - begin));
  });
}

void CpuBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  on_row_ranges(gate.rows, gate.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = row_ptr(gate, r);
      const float* u = row_ptr(up, r);
      float* o = row_ptr(out, r);
      silu_mul_row(g, u, o, gate.cols);
    }
  });
}

void CpuBackend::gelu(Tensor& x) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* v = row_ptr(x, r);
      for (int64_t c = 0; c < x.cols; ++c) {
        const float u = v[c];
        v[c] = 0.5f * u * (1.0f + std::tanh(kSqrt2OverPi * (u + 0.044715f * u * u * u)));
      }
    }
  });
}

void CpuBackend::gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  on_row_ranges(gate.rows, gate.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = row_ptr(gate, r);
      const float* u = row_ptr(up, r);
      float* o = row_ptr(out, r);
      for (int64_t c = 0; c < gate.cols; ++c) {
        const float v = g[c];
        o[c] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v))) * u[c];
      }
    }
  });
}

void CpuBackend::scale(Tensor& x, float factor) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* v = row_ptr(x, r);
      for (int64_t c = 0; c < x.cols; ++c) v[c] *= factor;
    }
  });
}

void CpuBackend::soft_cap(Tensor& x, float cap) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  assert(cap > 0.0f);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* v = row_ptr(x, r);
      for (int64_t c = 0; c < x.cols; ++c) v[c] = cap * std::tanh(v[c] / cap);
    }
  });
}

void CpuBackend::rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  assert(x.cols % head_dim == 0 && weight.cols == head_dim);
  on_row_ranges(x.rows, x.cols, [&](int64_t begin, int64_t end) {
    const Tensor rows = x.row_range(begin, end - begin);
    for (int64_t head = 0; head < x.cols / head_dim; ++head) {
      Tensor columns = rows.columns(head * head_dim, head_dim);
      rms_norm_rows(columns, weight, eps, columns);
    }
  });
}

}  // namespace servescope::compute
