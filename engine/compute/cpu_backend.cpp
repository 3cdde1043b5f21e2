#include "engine/compute/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_panel_dot.h"
#include "engine/core/error.h"

namespace servescope::compute {
namespace {

// Host memory: floats for activations, raw GGML bytes for weights.
struct CpuBuffer final : Buffer {
  std::vector<float> floats;
  std::vector<uint8_t> bytes;
};

CpuBuffer& host(const std::shared_ptr<Buffer>& buffer) { return static_cast<CpuBuffer&>(*buffer); }

float* row_ptr(const Tensor& t, int64_t row) {
  return host(t.buffer).floats.data() + t.offset + row * t.row_stride;
}

const uint8_t* weight_row(const WeightMatrix& w, int64_t row) {
  return host(w.buffer).bytes.data() + row * gguf::row_bytes(w.type, w.cols);
}

// Row `row` of a weight matrix as float32, whichever way it is stored (an embedding look-up).
void read_weight_row(const WeightMatrix& w, int64_t row, float* dst) {
  if (stored_in_panels(w.type)) {
    panel_row(w.type, host(w.buffer).bytes.data(), w.rows, w.cols, row, dst);
  } else {
    gguf::dequantize_row(w.type, weight_row(w, row), dst, w.cols);
  }
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
// From this many tokens on, Q8_0/Q4_0 products with 8-bit activations pack the tokens for the
// 512-bit pair kernel (where the CPU has one); below, the row kernels read them as they are.
constexpr int64_t kMinTokensForPairKernel = 8;

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
    double sum_sq = 0.0;
    for (int64_t c = 0; c < x.cols; ++c) sum_sq += double(in[c]) * in[c];
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

CpuBackend::CpuBackend(int threads, bool quantised_activations)
    : quantised_activations_(quantised_activations) {
  if (threads < 0) {
    throw InputError("the CPU backend's thread count must be >= 1 (or 0 for the default); got " +
                     std::to_string(threads));
  }
  pool_ =
      std::make_unique<CpuThreadPool>(threads == 0 ? CpuThreadPool::default_threads() : threads);
  dequantize_scratch_.resize(static_cast<size_t>(pool_->threads()));
  attention_scratch_.resize(static_cast<size_t>(pool_->threads()));
  // The pool splits products; OpenBLAS threads on top of it would oversubscribe the cores.
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
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

Tensor CpuBackend::create_tensor(int64_t rows, int64_t cols, BufferPurpose /*purpose*/) {
  auto buffer = std::make_shared<CpuBuffer>();
  buffer->floats.assign(static_cast<size_t>(rows * cols), 0.0f);
  return Tensor{buffer, 0, rows, cols, cols};
}

KvStore CpuBackend::create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) {
  check_kv_store_shape(type, slots, kv_dim);
  const uint64_t bytes = gguf::row_bytes(type, kv_dim) * static_cast<uint64_t>(slots);
  auto side = [bytes] {
    auto buffer = std::make_shared<CpuBuffer>();
    buffer->bytes.assign(bytes, 0);
    return buffer;
  };
  return KvStore{side(), side(), type, slots, kv_dim};
}

WeightMatrix CpuBackend::upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                                       std::span<const uint8_t> data) {
  assert(data.size() == gguf::row_bytes(type, cols) * static_cast<uint64_t>(rows));
  auto buffer = std::make_shared<CpuBuffer>();
  if (stored_in_panels(type)) {
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
  return host(values ? store.values : store.keys).bytes;
}

void CpuBackend::embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  assert(out.rows == static_cast<int64_t>(ids.size()) && out.cols == table.cols);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows) {
      throw InputError("token id " + std::to_string(ids[i]) + " is outside the table of " +
                       std::to_string(table.rows) + " rows");
    }
    read_weight_row(table, ids[i], row_ptr(out, static_cast<int64_t>(i)));
  }
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  rms_norm_rows(x, weight, eps, out);
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                            Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  layer_norm_rows(x, weight, bias, eps, out);
}

// The fusions are the plain operations one after the other, timed as one operation of the
// class the Vulkan backend's fused kernel has, so both backends' spans have the same kinds.
void CpuBackend::add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                              Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  add_rows(x, y);
  rms_norm_rows(x, weight, eps, out);
}

void CpuBackend::add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight,
                                const Tensor& bias, float eps, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  add_rows(x, y);
  layer_norm_rows(x, weight, bias, eps, out);
}

void CpuBackend::matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kMatmul);
  assert(x.cols == w.cols && out.cols == w.rows && out.rows == x.rows);
  if (quantised_activations_ && has_int8_kernel(w.type)) {
    matmul_on_int8_rows(x, w, out);
  } else if (stored_in_panels(w.type)) {
    matmul_on_panels(x, w, out);
  } else if (x.rows <= kMaxRowsForRowKernels) {
    matmul_on_rows(x, w, out);
  } else {
    matmul_on_tiles(x, w, out);
  }
  if (bias != nullptr) {
    const float* b = row_ptr(*bias, 0);
    for (int64_t r = 0; r < out.rows; ++r) {
      float* o = row_ptr(out, r);
      for (int64_t c = 0; c < out.cols; ++c) o[c] += b[c];
    }
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

void CpuBackend::matmul_on_int8_rows(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  if (x.rows == 0 || w.cols == 0) return;
  const int64_t blocks = w.cols / gguf::kQuantBlock;  // Q8_0 / Q4_0 rows are whole blocks
  quantised_x_.resize(static_cast<size_t>(x.rows * blocks));
  for (int64_t t = 0; t < x.rows; ++t) {
    quantize_activations(row_ptr(x, t), w.cols, quantised_x_.data() + t * blocks);
  }
  const uint64_t stride = gguf::row_bytes(w.type, w.cols);
  const uint8_t* rows = host(w.buffer).bytes.data();
  float* first_out = row_ptr(out, 0);
  const int64_t grain = std::max<int64_t>(8, kMultiplyAddsPerChunk / (w.cols * x.rows));
  const Int8PairKernel pair_kernel = int8_pair_kernel_for(w.type);
  if (pair_kernel != nullptr && x.rows >= kMinTokensForPairKernel) {
    // The tokens are packed once per product; the row tiles then read them from cache.
    const int64_t pairs = (blocks + 1) / 2;
    packed_x_.resize(static_cast<size_t>(x.rows * pairs));
    pack_token_pairs(w.type, quantised_x_.data(), blocks, x.rows, w.cols, packed_x_.data());
    pool_->parallel_for(w.rows, grain, [&](int64_t begin, int64_t end, int /*thread*/) {
      pair_kernel(rows + static_cast<uint64_t>(begin) * stride, stride, end - begin,
                  packed_x_.data(), x.rows, w.cols, first_out + begin, out.row_stride);
    });
    return;
  }
  const RowDotInt8Tokens dot = row_dot_int8_tokens_for(w.type);
  pool_->parallel_for(w.rows, grain, [&](int64_t begin, int64_t end, int /*thread*/) {
    dot(rows + static_cast<uint64_t>(begin) * stride, stride, end - begin, quantised_x_.data(),
        blocks, x.rows, w.cols, first_out + begin, out.row_stride);
  });
}

void CpuBackend::matmul_on_tiles(const Tensor& x, const WeightMatrix& w, Tensor& out) {
  const int64_t n = x.rows;
  // At least kMinTilesPerProduct tiles (of whole 16-row strips), so that every product has
  // work for the threads; tiles do not depend on the thread count, so neither does any result.
  const int64_t split_rows = (w.rows + kMinTilesPerProduct - 1) / kMinTilesPerProduct;
  const int64_t tile_rows =
      std::max<int64_t>(1, std::min({w.rows, kTileElements / w.cols,
                                     std::max<int64_t>(16, (split_rows + 15) / 16 * 16)}));
  const int64_t tiles = (w.rows + tile_rows - 1) / tile_rows;
  pool_->parallel_for(tiles, 1, [&](int64_t first_tile, int64_t end_tile, int thread) {
    std::vector<float>& scratch = dequantize_scratch_[static_cast<size_t>(thread)];
    for (int64_t tile_index = first_tile; tile_index < end_tile; ++tile_index) {
      const int64_t r0 = tile_index * tile_rows;
      const int64_t rows = std::min(tile_rows, w.rows - r0);
      // (F32 and F16 are stored in panels: matmul_on_panels.)
      scratch.resize(static_cast<size_t>(rows * w.cols));
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row_fast(w.type, weight_row(w, r0 + r), scratch.data() + r * w.cols, w.cols);
      }
      const float* tile = scratch.data();
      // out[:, r0:r0+rows] = x * tile^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n),
                  static_cast<blasint>(rows), static_cast<blasint>(w.cols), 1.0f, row_ptr(x, 0),
                  static_cast<blasint>(x.row_stride), tile, static_cast<blasint>(w.cols), 0.0f,
                  row_ptr(out, 0) + r0, static_cast<blasint>(out.row_stride));
    }
  });
}

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
  for (auto p = static_cast<int64_t>(table.cos_sin.size()) / (2 * pairs); p <= longest; ++p) {
    for (int64_t i = 0; i < pairs; ++i) {
      const double theta = rope.angle(p, i, head_dim);
      table.cos_sin.push_back(static_cast<float>(std::cos(theta)));
      table.cos_sin.push_back(static_cast<float>(std::sin(theta)));
    }
  }
  // Normal mode turns (2i, 2i+1), neox mode (i, i + d/2).
  const int64_t stride = rope.neox ? 1 : 2;
  const int64_t partner = rope.neox ? pairs : 1;
  for (int64_t r = 0; r < x.rows; ++r) {
    float* row = row_ptr(x, r);
    const float* angles = table.cos_sin.data() + positions[r] * 2 * pairs;
    for (int64_t i = 0; i < pairs; ++i) {
      const float cos_t = angles[2 * i];
      const float sin_t = angles[2 * i + 1];
      for (int64_t head = 0; head < x.cols / head_dim; ++head) {
        float* first = row + head * head_dim + stride * i;
        const float a = first[0];
        const float b = first[partner];
        first[0] = a * cos_t - b * sin_t;
        first[partner] = a * sin_t + b * cos_t;
      }
    }
  }
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
  for (int64_t r = 0; r < keys.rows; ++r) {
    const auto slot = static_cast<uint64_t>(slots[static_cast<size_t>(r)]);
    assert(slot < static_cast<uint64_t>(store.slots));
    gguf::quantize_row(store.type, row_ptr(keys, r), host(store.keys).bytes.data() + slot * stride,
                       store.kv_dim);
    gguf::quantize_row(store.type, row_ptr(values, r),
                       host(store.values).bytes.data() + slot * stride, store.kv_dim);
  }
}

namespace {

// Dequantises the rows of `slots` from one side (keys or values) of a store into dst.
void gather_kv_rows(const KvStore& store, const std::shared_ptr<Buffer>& side,
                    std::span<const int32_t> slots, std::vector<float>& dst) {
  const uint64_t stride = gguf::row_bytes(store.type, store.kv_dim);
  dst.resize(slots.size() * static_cast<size_t>(store.kv_dim));
  for (size_t t = 0; t < slots.size(); ++t) {
    dequantize_row_fast(store.type, host(side).bytes.data() + slots[t] * stride,
                        dst.data() + t * static_cast<size_t>(store.kv_dim), store.kv_dim);
  }
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                           const AttentionBatch& batch, Tensor& out, Tensor* weights) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kAttention);
  // Query rows are independent (each reads only its own sequence's context), so they split
  // over the threads; rows of one sequence mostly land on one thread and share its gather.
  pool_->parallel_for(q.rows, 1, [&](int64_t begin, int64_t end, int thread) {
    attend_rows(q, store, shape, batch, out, weights, begin, end,
                attention_scratch_[static_cast<size_t>(thread)]);
  });
}

namespace {

// out[c] += p * v[c], the value half of attention (a prefill's attention spends about half its
// time here). Also compiled for AVX-512 and AVX2, picked at run time; products and sums stay
// separate roundings (no contraction into FMAs), so every version gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SERVESCOPE_VECTOR_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#elif defined(__x86_64__) && defined(__clang__)
#define SERVESCOPE_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SERVESCOPE_VECTOR_CLONES
#endif
SERVESCOPE_VECTOR_CLONES void add_scaled(float* out, const float* v, float p, int64_t d) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t c = 0; c < d; ++c) out[c] += p * v[c];
}

}  // namespace

void CpuBackend::attend_rows(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                             const AttentionBatch& batch, Tensor& out, Tensor* weights,
                             int64_t begin, int64_t end, AttentionScratch& scratch) {
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
  const auto* stored_keys = reinterpret_cast<const float*>(host(store.keys).bytes.data());
  const auto* stored_values = reinterpret_cast<const float*>(host(store.values).bytes.data());
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
      float sum = 0.0f;
      for (int64_t t = first; t < n_keys; ++t) {
        scores[t] = std::exp(scores[t] - max_score);
        sum += scores[t];
      }
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
  add_rows(x, y);
}

void CpuBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  for (int64_t r = 0; r < gate.rows; ++r) {
    const float* g = row_ptr(gate, r);
    const float* u = row_ptr(up, r);
    float* o = row_ptr(out, r);
    for (int64_t c = 0; c < gate.cols; ++c) o[c] = g[c] / (1.0f + std::exp(-g[c])) * u[c];
  }
}

void CpuBackend::gelu(Tensor& x) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t r = 0; r < x.rows; ++r) {
    float* v = row_ptr(x, r);
    for (int64_t c = 0; c < x.cols; ++c) {
      const float u = v[c];
      v[c] = 0.5f * u * (1.0f + std::tanh(kSqrt2OverPi * (u + 0.044715f * u * u * u)));
    }
  }
}

void CpuBackend::gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t r = 0; r < gate.rows; ++r) {
    const float* g = row_ptr(gate, r);
    const float* u = row_ptr(up, r);
    float* o = row_ptr(out, r);
    for (int64_t c = 0; c < gate.cols; ++c) {
      const float v = g[c];
      o[c] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v))) * u[c];
    }
  }
}

void CpuBackend::scale(Tensor& x, float factor) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  for (int64_t r = 0; r < x.rows; ++r) {
    float* v = row_ptr(x, r);
    for (int64_t c = 0; c < x.cols; ++c) v[c] *= factor;
  }
}

void CpuBackend::soft_cap(Tensor& x, float cap) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kOther);
  assert(cap > 0.0f);
  for (int64_t r = 0; r < x.rows; ++r) {
    float* v = row_ptr(x, r);
    for (int64_t c = 0; c < x.cols; ++c) v[c] = cap * std::tanh(v[c] / cap);
  }
}

void CpuBackend::rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) {
  const ScopedTimer timer(profile_, telemetry::KernelKind::kNorm);
  assert(x.cols % head_dim == 0 && weight.cols == head_dim);
  for (int64_t head = 0; head < x.cols / head_dim; ++head) {
    Tensor columns = x.columns(head * head_dim, head_dim);
    rms_norm_rows(columns, weight, eps, columns);
  }
}

}  // namespace servescope::compute
