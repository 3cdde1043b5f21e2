// Every Vulkan kernel against the CPU reference backend on random data: odd shapes that are
// not multiples of any workgroup size, column views with offsets and strides, every weight
// type, weights split over several bindings, the staging path of discrete GPUs, and the paged
// KV store (every KV type, ragged batches, scattered slots) down to its bytes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/compute/vulkan/vulkan_check.h"
#include "tests/compute/vulkan_test_support.h"

namespace servescope::compute::vulkan {
namespace {

using gguf::GgmlType;

std::vector<float> random_values(size_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

// GGML bytes of a random [rows x cols] matrix in `type`.
std::vector<uint8_t> random_weight_bytes(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  const std::vector<float> values = random_values(static_cast<size_t>(rows * cols), seed, 0.5f);
  const uint64_t row_bytes = gguf::row_bytes(type, cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    gguf::quantize_row(type, values.data() + r * cols, bytes.data() + r * row_bytes, cols);
  }
  return bytes;
}

// Random super-blocks of a K-quant type: every byte random (all scale, min and quant bit
// patterns, not only those a quantiser writes) except the fp16 d (and dmin), chosen so that
// weights stay within +-1 (`span`: the largest |scale * q| of the type).
std::vector<uint8_t> random_super_blocks(GgmlType type, int64_t blocks, uint32_t seed) {
  struct DFields {
    size_t d, dmin;  // offsets; dmin == d where the type has none
    float span;
  };
  DFields fields{};
  switch (type) {
    case GgmlType::Q2_K:
      fields = {offsetof(gguf::BlockQ2_K, d), offsetof(gguf::BlockQ2_K, dmin), 15 * 3};
      break;
    case GgmlType::Q3_K:
      fields = {offsetof(gguf::BlockQ3_K, d), offsetof(gguf::BlockQ3_K, d), 32 * 4};
      break;
    case GgmlType::Q4_K:
      fields = {offsetof(gguf::BlockQ4_K, d), offsetof(gguf::BlockQ4_K, dmin), 63 * 15};
      break;
    case GgmlType::Q5_K:
      fields = {offsetof(gguf::BlockQ5_K, d), offsetof(gguf::BlockQ5_K, dmin), 63 * 31};
      break;
    default:
      fields = {offsetof(gguf::BlockQ6_K, d), offsetof(gguf::BlockQ6_K, d), 128 * 32};
      break;
  }
  const auto block_bytes = static_cast<size_t>(gguf::block_bytes(type));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-1.0f / fields.span, 1.0f / fields.span);
  std::vector<uint8_t> bytes(block_bytes * static_cast<size_t>(blocks));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  for (size_t b = 0; b < static_cast<size_t>(blocks); ++b) {
    for (const size_t at : {fields.d, fields.dmin}) {
      const uint16_t half = gguf::fp32_to_fp16(scale(rng));
      std::memcpy(bytes.data() + b * block_bytes + at, &half, sizeof half);
    }
  }
  return bytes;
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

std::string type_label(GgmlType type) { return std::string(gguf::type_name(type)); }

// The same operation on both backends; tensors come in pairs with identical contents.
class KernelParity : public testing::Test {
 protected:
  struct Pair {
    Tensor cpu, vk;
  };

  void SetUp() override {
    SERVESCOPE_SKIP_WITHOUT_VULKAN();
    enable_validation();
    vk_ = std::make_unique<VulkanBackend>(options());
  }
  void TearDown() override {
    if (vk_) expect_validation_clean(vk_->validation_log());
  }
  virtual VulkanBackendOptions options() {
    VulkanBackendOptions o;
    o.timestamps = true;  // exercise the queries under validation even where they are costly
    return o;
  }
  void check_matmul_every_type_and_token_count();
  void check_paged_attention(GgmlType kv_type);
  void check_attention_capture(const Pair& q, const KvStore& cpu_store, const KvStore& vk_store,
                               const AttentionShape& shape, const AttentionBatch& batch,
                               const std::vector<float>& expected_out);
  void check_product_shapes();
  void check_kquant_products();
  void check_copy_kv_slots();

  // A [rows x cols] tensor; with pad_cols > 0 a column view of a wider one, at column 3.
  Pair random_tensor(int64_t rows, int64_t cols, uint32_t seed, int64_t pad_cols = 0,
                     float scale = 1.0f) {
    const int64_t full_cols = cols + pad_cols;
    Pair p{cpu_.create_tensor(rows, full_cols, BufferPurpose::kActivations),
           vk_->create_tensor(rows, full_cols, BufferPurpose::kActivations)};
    const auto values = random_values(static_cast<size_t>(rows * full_cols), seed, scale);
    cpu_.write(p.cpu, values);
    vk_->write(p.vk, values);
    if (pad_cols > 0) {
      const int64_t first = std::min<int64_t>(3, pad_cols);
      p.cpu = p.cpu.columns(first, cols);
      p.vk = p.vk.columns(first, cols);
    }
    return p;
  }

  // Returns the largest difference seen.
  float expect_close(const Pair& p, float tolerance, const std::string& what) {
    const auto expected = cpu_.read(p.cpu);
    const auto actual = vk_->read(p.vk);
    const float difference = max_abs_difference(actual, expected);
    EXPECT_LE(difference, tolerance) << what;
    return difference;
  }

  CpuBackend cpu_;
  std::unique_ptr<VulkanBackend> vk_;
};

constexpr GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                  GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1};

void KernelParity::check_matmul_every_type_and_token_count() {
  for (const GgmlType type : kAllTypes) {
    const bool blocks = gguf::block_elements(type) > 1;
    const int64_t rows = 67;
    const int64_t cols = blocks ? 96 : 83;
    const auto bytes = random_weight_bytes(type, rows, cols, 7);
    const WeightMatrix w_cpu = cpu_.upload_matrix(type, rows, cols, bytes);
    const WeightMatrix w_vk = vk_->upload_matrix(type, rows, cols, bytes);
    Pair bias = random_tensor(1, rows, 11);
    for (const int64_t n : {1, 2, 3, 4, 5, 8, 9, 33, 70}) {
      for (const bool with_bias : {false, true}) {
        Pair x = random_tensor(n, cols, 100 + static_cast<uint32_t>(n), 5);  // column view
        Pair out = random_tensor(n, rows, 200, 9);                           // column view
        cpu_.matmul(x.cpu, w_cpu, with_bias ? &bias.cpu : nullptr, out.cpu);
        vk_->matmul(x.vk, w_vk, with_bias ? &bias.vk : nullptr, out.vk);
        expect_close(
            out, 1e-4f,
            type_label(type) + " n=" + std::to_string(n) + " bias=" + std::to_string(with_bias));
      }
    }
  }
}

TEST_F(KernelParity, MatmulEveryTypeAndTokenCount) { check_matmul_every_type_and_token_count(); }

// Prefill-sized products: several groups of rows (matmul_lanes: 64 invocations x 4 rows),
// partial token tiles, F32/F16 rows that end in part of a 32-column slice (or have no whole
// slice), x read in place (vec4-aligned) and as a column view.
void KernelParity::check_product_shapes() {
  struct Shape {
    int64_t rows, float_cols, block_cols;
  };
  for (const GgmlType type : kAllTypes) {
    const bool blocks = gguf::block_elements(type) > 1;
    for (const Shape shape : {Shape{300, 200, 160}, Shape{5, 4, 32}}) {
      const int64_t cols = blocks ? shape.block_cols : shape.float_cols;
      const auto bytes = random_weight_bytes(type, shape.rows, cols, 17);
      const WeightMatrix w_cpu = cpu_.upload_matrix(type, shape.rows, cols, bytes);
      const WeightMatrix w_vk = vk_->upload_matrix(type, shape.rows, cols, bytes);
      Pair bias = random_tensor(1, shape.rows, 19);
      for (const int64_t n : {1, 3, 8, 9, 41, 128}) {  // decode and prefill
        for (const int64_t x_pad : {0, 5}) {
          Pair x = random_tensor(n, cols, 300 + static_cast<uint32_t>(n), x_pad);
          Pair out = random_tensor(n, shape.rows, 400);
          cpu_.matmul(x.cpu, w_cpu, &bias.cpu, out.cpu);
          vk_->matmul(x.vk, w_vk, &bias.vk, out.vk);
          expect_close(out, 1e-4f,
                       type_label(type) + " " + std::to_string(shape.rows) + "x" +
                           std::to_string(cols) + " n=" + std::to_string(n) +
                           " x_pad=" + std::to_string(x_pad));
        }
      }
    }
  }
}

TEST_F(KernelParity, MatmulShapes) { check_product_shapes(); }

constexpr GgmlType kKQuantTypes[] = {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                     GgmlType::Q6_K};

// K-quant products: two super-blocks per row (slices past the first super-block), a row count
// that fills no group evenly, decode and prefill token counts, x as a column view, a bias.
// Random super-blocks (every scale, min and quant bit pattern); the same table through embed
// must give exactly gguf's dequantised values.
void KernelParity::check_kquant_products() {
  const int64_t rows = 67;
  const int64_t cols = 512;
  for (const GgmlType type : kKQuantTypes) {
    const auto bytes = random_super_blocks(type, rows * cols / 256, 29);
    const WeightMatrix w_cpu = cpu_.upload_matrix(type, rows, cols, bytes);
    const WeightMatrix w_vk = vk_->upload_matrix(type, rows, cols, bytes);
    Pair bias = random_tensor(1, rows, 31);
    for (const int64_t n : {1, 3, 9, 41}) {
      Pair x = random_tensor(n, cols, 500 + static_cast<uint32_t>(n), 5);  // column view
      Pair out = random_tensor(n, rows, 600, 3);
      cpu_.matmul(x.cpu, w_cpu, &bias.cpu, out.cpu);
      vk_->matmul(x.vk, w_vk, &bias.vk, out.vk);
      expect_close(out, 1e-4f, type_label(type) + " n=" + std::to_string(n));
    }
    const std::vector<int32_t> ids = {0, 66, 3, 3, 40};
    Pair embedded = random_tensor(static_cast<int64_t>(ids.size()), cols, 1, 4);
    cpu_.embed(w_cpu, ids, embedded.cpu);
    vk_->embed(w_vk, ids, embedded.vk);
    expect_close(embedded, 0.0f, "embed " + type_label(type));
  }
}

TEST_F(KernelParity, KQuantProductsAndEmbed) { check_kquant_products(); }

// Both kernel styles, whichever this device would choose: workgroup tiles (the default on
// GPUs) and one row per invocation (the default on CPU devices such as lavapipe).
class WorkgroupTiles : public KernelParity {
 protected:
  VulkanBackendOptions options() override {
    VulkanBackendOptions o = KernelParity::options();
    o.kernel_style = KernelStyle::kWorkgroupTiles;
    return o;
  }
};
TEST_F(WorkgroupTiles, MatmulEveryTypeAndTokenCount) { check_matmul_every_type_and_token_count(); }
TEST_F(WorkgroupTiles, PagedAttentionF32) { check_paged_attention(GgmlType::F32); }
TEST_F(WorkgroupTiles, PagedAttentionF16) { check_paged_attention(GgmlType::F16); }
TEST_F(WorkgroupTiles, PagedAttentionQ8_0) { check_paged_attention(GgmlType::Q8_0); }
TEST_F(WorkgroupTiles, MatmulShapes) { check_product_shapes(); }
TEST_F(WorkgroupTiles, KQuantProductsAndEmbed) { check_kquant_products(); }

class RowPerInvocation : public KernelParity {
 protected:
  VulkanBackendOptions options() override {
    VulkanBackendOptions o = KernelParity::options();
    o.kernel_style = KernelStyle::kRowPerInvocation;
    return o;
  }
};
TEST_F(RowPerInvocation, MatmulEveryTypeAndTokenCount) {
  check_matmul_every_type_and_token_count();
}
TEST_F(RowPerInvocation, PagedAttentionF32) { check_paged_attention(GgmlType::F32); }
TEST_F(RowPerInvocation, PagedAttentionF16) { check_paged_attention(GgmlType::F16); }
TEST_F(RowPerInvocation, PagedAttentionQ8_0) { check_paged_attention(GgmlType::Q8_0); }
TEST_F(RowPerInvocation, MatmulShapes) { check_product_shapes(); }
TEST_F(RowPerInvocation, KQuantProductsAndEmbed) { check_kquant_products(); }

// CPU-style kernels without subgroups (devices whose subgroups are too narrow or cannot
// shuffle): matmul_vec, prefill in passes of 8 tokens; attention_rows with one invocation per
// (row, head) in workgroups of 1-8.
class WithoutSubgroups : public KernelParity {
 protected:
  VulkanBackendOptions options() override {
    VulkanBackendOptions o = KernelParity::options();
    o.kernel_style = KernelStyle::kRowPerInvocation;
    o.subgroup_matmul = false;
    return o;
  }
};
TEST_F(WithoutSubgroups, MatmulEveryTypeAndTokenCount) {
  check_matmul_every_type_and_token_count();
}
TEST_F(WithoutSubgroups, MatmulShapes) { check_product_shapes(); }
TEST_F(WithoutSubgroups, KQuantProductsAndEmbed) { check_kquant_products(); }
TEST_F(WithoutSubgroups, PagedAttentionF32) { check_paged_attention(GgmlType::F32); }
TEST_F(WithoutSubgroups, PagedAttentionF16) { check_paged_attention(GgmlType::F16); }
TEST_F(WithoutSubgroups, PagedAttentionQ8_0) { check_paged_attention(GgmlType::Q8_0); }

TEST_F(KernelParity, EmbedEveryType) {
  for (const GgmlType type : kAllTypes) {
    const int64_t rows = 53;
    const int64_t cols = gguf::block_elements(type) == 1 ? 70 : 64;
    const auto bytes = random_weight_bytes(type, rows, cols, 3);
    const WeightMatrix t_cpu = cpu_.upload_matrix(type, rows, cols, bytes);
    const WeightMatrix t_vk = vk_->upload_matrix(type, rows, cols, bytes);
    const std::vector<int32_t> ids = {0, 52, 17, 17, 5};
    Pair out = random_tensor(static_cast<int64_t>(ids.size()), cols, 1, 4);
    cpu_.embed(t_cpu, ids, out.cpu);
    vk_->embed(t_vk, ids, out.vk);
    expect_close(out, 0.0f, type_label(type));
  }
}

TEST_F(KernelParity, EmbedRejectsIdsOutsideTheTable) {
  const auto bytes = random_weight_bytes(GgmlType::F32, 4, 8, 1);
  const WeightMatrix table = vk_->upload_matrix(GgmlType::F32, 4, 8, bytes);
  Tensor out = vk_->create_tensor(1, 8, BufferPurpose::kActivations);
  const std::vector<int32_t> ids = {4};
  EXPECT_THROW(vk_->embed(table, ids, out), InputError);
}

TEST_F(KernelParity, Norms) {
  for (const int64_t cols : {1, 63, 65, 200}) {
    Pair x = random_tensor(7, cols, 1, 3, 3.0f);
    Pair weight = random_tensor(1, cols, 2);
    Pair bias = random_tensor(1, cols, 3);
    Pair rms = random_tensor(7, cols, 4, 2);
    Pair layer = random_tensor(7, cols, 5, 2);
    cpu_.rms_norm(x.cpu, weight.cpu, 1e-5f, rms.cpu);
    vk_->rms_norm(x.vk, weight.vk, 1e-5f, rms.vk);
    cpu_.layer_norm(x.cpu, weight.cpu, bias.cpu, 1e-5f, layer.cpu);
    vk_->layer_norm(x.vk, weight.vk, bias.vk, 1e-5f, layer.vk);
    expect_close(rms, 1e-5f, "rms_norm cols=" + std::to_string(cols));
    expect_close(layer, 1e-5f, "layer_norm cols=" + std::to_string(cols));
  }
}

// Per-head RMSNorm (gemma3's q and k norms), in place on a column view of a wider tensor, as
// the queries of a fused q|k|v projection are; the columns beside it stay as they were.
TEST_F(KernelParity, PerHeadNorms) {
  for (const int64_t head_dim : {16, 70, 256}) {
    Pair qkv = random_tensor(5, 4 * head_dim, 1, 0, 3.0f);
    Pair q{qkv.cpu.columns(head_dim, 3 * head_dim), qkv.vk.columns(head_dim, 3 * head_dim)};
    Pair weight = random_tensor(1, head_dim, 2);
    cpu_.rms_norm_heads(q.cpu, weight.cpu, head_dim, 1e-6f);
    vk_->rms_norm_heads(q.vk, weight.vk, head_dim, 1e-6f);
    expect_close(qkv, 1e-5f, "rms_norm_heads head_dim=" + std::to_string(head_dim));
    // Against the plain norm of one head's columns.
    Pair head = random_tensor(5, head_dim, 3);
    Pair one_head_norm = random_tensor(5, head_dim, 4);
    const std::vector<float> before = cpu_.read(head.cpu);
    cpu_.rms_norm(head.cpu, weight.cpu, 1e-6f, one_head_norm.cpu);
    cpu_.rms_norm_heads(head.cpu, weight.cpu, head_dim, 1e-6f);
    EXPECT_EQ(cpu_.read(head.cpu), cpu_.read(one_head_norm.cpu));
    EXPECT_NE(cpu_.read(head.cpu), before);
  }
}

// The residual add fused into the norm (add_rms_norm / add_layer_norm): the normalised output
// and the updated residual, against the CPU backend's plain add followed by the norm, on column
// views with their own offsets and strides.
TEST_F(KernelParity, ResidualAddThenNorm) {
  for (const bool layer : {false, true}) {
    for (const int64_t cols : {1, 70, 200}) {
      Pair x = random_tensor(5, cols, 1, 2);
      Pair y = random_tensor(5, cols, 2, 3);
      Pair weight = random_tensor(1, cols, 3);
      Pair bias = random_tensor(1, cols, 4);
      Pair out = random_tensor(5, cols, 5, 1);
      cpu_.add(x.cpu, y.cpu);
      if (layer) {
        cpu_.layer_norm(x.cpu, weight.cpu, bias.cpu, 1e-5f, out.cpu);
        vk_->add_layer_norm(x.vk, y.vk, weight.vk, bias.vk, 1e-5f, out.vk);
      } else {
        cpu_.rms_norm(x.cpu, weight.cpu, 1e-5f, out.cpu);
        vk_->add_rms_norm(x.vk, y.vk, weight.vk, 1e-5f, out.vk);
      }
      const std::string what =
          std::string(layer ? "layer" : "rms") + " cols=" + std::to_string(cols);
      expect_close(out, 1e-5f, what + ": norm");
      expect_close(x, 1e-6f, what + ": residual");
    }
  }
}

// The CPU backend's fused operations are its plain ones in sequence, bit for bit.
TEST(CpuFusions, AreThePlainOperationsInSequence) {
  struct Results {
    std::vector<float> residual, normed, qk;
  };
  auto run = [](bool fused, bool layer) {
    CpuBackend b;
    auto tensor = [&](int64_t rows, int64_t cols, uint32_t seed) {
      Tensor t = b.create_tensor(rows, cols, BufferPurpose::kActivations);
      b.write(t, random_values(static_cast<size_t>(rows * cols), seed));
      return t;
    };
    Tensor x = tensor(6, 40, 1), y = tensor(6, 40, 2), w = tensor(1, 40, 3),
           bias = tensor(1, 40, 4);
    Tensor out = b.create_tensor(6, 40, BufferPurpose::kActivations);
    Tensor qk = tensor(6, 40, 5);  // q | k as column views, as a fused projection gives them
    Tensor q = qk.columns(0, 24), k = qk.columns(24, 16);
    const std::vector<int32_t> positions = {0, 1, 2, 7, 100, 3000};
    if (fused) {
      if (layer) {
        b.add_layer_norm(x, y, w, bias, 1e-5f, out);
      } else {
        b.add_rms_norm(x, y, w, 1e-5f, out);
      }
      b.rope_qk(q, k, 8, positions, 10000.0f);
    } else {
      b.add(x, y);
      if (layer) {
        b.layer_norm(x, w, bias, 1e-5f, out);
      } else {
        b.rms_norm(x, w, 1e-5f, out);
      }
      b.rope(q, 8, positions, 10000.0f);
      b.rope(k, 8, positions, 10000.0f);
    }
    return Results{b.read(x), b.read(out), b.read(qk)};
  };
  for (const bool layer : {false, true}) {
    const Results fused = run(true, layer);
    const Results plain = run(false, layer);
    EXPECT_EQ(fused.residual, plain.residual);
    EXPECT_EQ(fused.normed, plain.normed);
    EXPECT_EQ(fused.qk, plain.qk);
  }
}

// rope_qk rotates queries and keys of one fused projection (disjoint column views) in one
// dispatch on Vulkan; the CPU backend ropes one after the other.
TEST_F(KernelParity, RopeAtLargePositions) {
  for (const int64_t head_dim : {8, 64}) {
    Pair qk = random_tensor(4, 6 * head_dim, 9, 6);  // q: 4 heads, k: 2 heads, side by side
    Pair q{qk.cpu.columns(0, 4 * head_dim), qk.vk.columns(0, 4 * head_dim)};
    Pair k{qk.cpu.columns(4 * head_dim, 2 * head_dim), qk.vk.columns(4 * head_dim, 2 * head_dim)};
    Pair other = random_tensor(4, 2 * head_dim, 10);
    const std::vector<int32_t> positions = {0, 1, 511, 4000};
    cpu_.rope_qk(q.cpu, k.cpu, head_dim, positions, 10000.0f);
    vk_->rope_qk(q.vk, k.vk, head_dim, positions, 10000.0f);
    cpu_.rope(other.cpu, head_dim, positions, 10000.0f);  // separate tensors, the plain rope
    vk_->rope(other.vk, head_dim, positions, 10000.0f);
    expect_close(qk, 1e-5f, "q | k, head_dim=" + std::to_string(head_dim));
    expect_close(other, 1e-5f, "rope, head_dim=" + std::to_string(head_dim));
    // Overlapping views would be rotated twice at once by one dispatch: refused.
    EXPECT_THROW(vk_->rope_qk(q.vk, q.vk, head_dim, positions, 10000.0f), InputError);
  }
}

// Neox pairs (qwen2, phi3, gemma), linear position scaling and llama 3's per-pair frequency
// factors, alone and together.
TEST_F(KernelParity, RopeModesAndScaling) {
  const int64_t head_dim = 16;
  RopeSpec factors(500000.0f);
  factors.freq_factors = {1.0f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f};
  RopeSpec linear(10000.0f);
  linear.freq_scale = 0.25f;
  RopeSpec all = factors;
  all.freq_scale = 0.5f;
  all.neox = true;
  RopeSpec neox(1000000.0f);
  neox.neox = true;
  const std::vector<int32_t> positions = {0, 3, 100, 3000, 7};
  for (const RopeSpec& spec : {neox, linear, factors, all}) {
    Pair qk = random_tensor(5, 5 * head_dim, 11, 3);
    Pair q{qk.cpu.columns(0, 3 * head_dim), qk.vk.columns(0, 3 * head_dim)};
    Pair k{qk.cpu.columns(3 * head_dim, 2 * head_dim), qk.vk.columns(3 * head_dim, 2 * head_dim)};
    const std::vector<float> before = cpu_.read(qk.cpu);
    cpu_.rope_qk(q.cpu, k.cpu, head_dim, positions, spec);
    vk_->rope_qk(q.vk, k.vk, head_dim, positions, spec);
    expect_close(qk, 1e-5f, "rope_qk neox=" + std::to_string(spec.neox));
    Pair x = random_tensor(5, 2 * head_dim, 12);
    cpu_.rope(x.cpu, head_dim, positions, spec);
    vk_->rope(x.vk, head_dim, positions, spec);
    expect_close(x, 1e-5f, "rope neox=" + std::to_string(spec.neox));
    EXPECT_NE(cpu_.read(qk.cpu), before);
  }
  // Neox rotates element i with i + d/2: position 1, pair 0 turns by 1 radian (base^0).
  Pair one = random_tensor(1, head_dim, 13);
  const std::vector<float> v = cpu_.read(one.cpu);
  const std::vector<int32_t> at_one = {1};
  cpu_.rope(one.cpu, head_dim, at_one, neox);
  const std::vector<float> turned = cpu_.read(one.cpu);
  const auto half = static_cast<size_t>(head_dim / 2);
  EXPECT_NEAR(turned[0], v[0] * std::cos(1.0f) - v[half] * std::sin(1.0f), 1e-6f);
  EXPECT_NEAR(turned[half], v[0] * std::sin(1.0f) + v[half] * std::cos(1.0f), 1e-6f);
}

TEST_F(KernelParity, ElementwiseOperations) {
  Pair x = random_tensor(5, 77, 1, 2, 20.0f);  // large values: GELU must not overflow to NaN
  Pair y = random_tensor(5, 77, 2, 5);
  cpu_.add(x.cpu, y.cpu);
  vk_->add(x.vk, y.vk);
  expect_close(x, 1e-6f, "add");
  cpu_.gelu(x.cpu);
  vk_->gelu(x.vk);
  expect_close(x, 1e-4f, "gelu");
  Pair gate = random_tensor(5, 77, 3, 0, 30.0f);
  Pair up = random_tensor(5, 77, 4, 1);
  cpu_.silu_mul(gate.cpu, up.cpu, gate.cpu);  // in place, as the transformer does
  vk_->silu_mul(gate.vk, up.vk, gate.vk);
  expect_close(gate, 1e-4f, "silu_mul");
  // More rows than a CPU device's workgroups over rows (8): each walks several rows.
  Pair tall_gate = random_tensor(21, 77, 8, 0, 30.0f);
  Pair tall_up = random_tensor(21, 77, 9, 1);
  cpu_.silu_mul(tall_gate.cpu, tall_up.cpu, tall_gate.cpu);
  vk_->silu_mul(tall_gate.vk, tall_up.vk, tall_gate.vk);
  expect_close(tall_gate, 1e-4f, "silu_mul of 21 rows");
  Pair gelu_gate = random_tensor(5, 77, 5, 2, 30.0f);
  cpu_.gelu_mul(gelu_gate.cpu, up.cpu, gelu_gate.cpu);
  vk_->gelu_mul(gelu_gate.vk, up.vk, gelu_gate.vk);
  expect_close(gelu_gate, 1e-4f, "gelu_mul");
  Pair scaled = random_tensor(5, 77, 6, 3);
  cpu_.scale(scaled.cpu, 8.0f);
  vk_->scale(scaled.vk, 8.0f);
  expect_close(scaled, 1e-6f, "scale");
  Pair capped = random_tensor(5, 77, 7, 1, 100.0f);  // far past the cap: tanh saturates
  cpu_.soft_cap(capped.cpu, 30.0f);
  vk_->soft_cap(capped.vk, 30.0f);
  expect_close(capped, 1e-4f, "soft_cap");
  for (const float value : vk_->read(capped.vk)) EXPECT_LE(std::abs(value), 30.0f);
}

// Rows in any order (and repeated) from a column view into another view, e.g. a batch's logit
// rows; the gather reads what the operation before it wrote.
TEST_F(KernelParity, GatherRows) {
  Pair qkv = random_tensor(7, 72, 2);
  const Pair src{qkv.cpu.columns(24, 24), qkv.vk.columns(24, 24)};
  Pair dst = random_tensor(5, 24, 1, 4);
  Pair again = random_tensor(2, 24, 3);
  const std::vector<int32_t> rows = {6, 0, 3, 3, 5};
  cpu_.gather_rows(src.cpu, rows, dst.cpu);
  vk_->gather_rows(src.vk, rows, dst.vk);
  const std::vector<int32_t> back = {4, 1};
  cpu_.gather_rows(dst.cpu, back, again.cpu);
  vk_->gather_rows(dst.vk, back, again.vk);
  expect_close(dst, 0.0f, "gathered");
  expect_close(again, 0.0f, "gathered from the gathered");
  const std::vector<int32_t> outside = {7};
  Tensor one_row = again.vk.row_range(0, 1);
  EXPECT_THROW(vk_->gather_rows(src.vk, outside, one_row), InputError);
}

// --- paged KV store -------------------------------------------------------------------------

// A ragged batch: sequences with `start` tokens already stored that now add `added` tokens
// (start 0: a prefill chunk from scratch; added 1: a decode token).
struct SequencePlan {
  int32_t start, added;
};

struct PagedCase {
  int64_t n_heads, n_kv_heads, head_dim;
  std::vector<SequencePlan> sequences;
  bool adjacent_slots = false;  // slots 0, 1, 2, ... (else a random permutation)
  bool fused_qkv = false;       // keys and values are column views of one tensor (gpt2)
  // The architectures' variations (gemma2, gemma3): AttentionShape's scale, softcap, window.
  float scale = 0.0f;
  float softcap = 0.0f;
  int64_t window = 0;
  std::string label() const {
    std::string s = "heads=" + std::to_string(n_heads) + "/" + std::to_string(n_kv_heads) +
                    " d=" + std::to_string(head_dim) + " scale=" + std::to_string(scale) +
                    " softcap=" + std::to_string(softcap) + " window=" + std::to_string(window) +
                    " seqs=";
    for (const auto& q : sequences)
      s += std::to_string(q.start) + "+" + std::to_string(q.added) + " ";
    return s;
  }
};

const std::vector<PagedCase>& paged_cases() {
  static const std::vector<PagedCase> cases = {
      {4, 4, 16, {{0, 1}}},
      {2, 1, 64, {{9, 1}}},  // 2 (row, head) pairs: attention_rows in workgroups of 1
      {6, 2, 40, {{0, 13}, {5, 1}, {300, 1}}},  // a context longer than one 256-key chunk
      {6, 2, 48, {{0, 13}, {5, 1}, {300, 1}}, false, true},
      {3, 1, 256, {{5, 3}}},
      {2, 2, 7, {{250, 9}, {0, 2}}},              // head_dim not a multiple of 4
      {3, 1, 7, {{0, 5}, {2, 1}, {6, 1}}, true},  // odd F16 rows: adjacent slots share words
      {8, 4, 64, {{0, 70}}},
      {4, 2, 16, {{0, 40}, {3, 2}, {1, 1}}, true},  // Q8_0 rows of 34 bytes, adjacent slots
      {4, 1, 32, {{7, 1}, {0, 4}, {19, 1}, {2, 6}}, false, true},
      // Soft-capped scores and sliding windows: a window inside the first chunk, one that
      // starts past a 256-key chunk boundary, and a window longer than some contexts.
      {4, 2, 16, {{0, 40}, {3, 2}, {1, 1}}, false, false, 0.3f, 1.5f, 7},
      {6, 2, 32, {{0, 13}, {5, 1}, {300, 1}}, false, false, 0.0f, 2.0f, 100},
      {2, 1, 64, {{9, 1}, {0, 6}}, false, true, 0.0f, 0.0f, 4},
      // Prefill-sized (>= 64 pairs): on CPU devices 8 rows of a head share each key's loads.
      // Rows not a multiple of 8, a head of 12 vec4 (the last eighth of a key on 4 lanes only),
      // a prompt after a cached context, a block that mixes sequences, a window.
      {4, 2, 48, {{0, 21}}},
      {8, 2, 32, {{50, 20}, {0, 3}}, false, false, 0.0f, 0.0f, 9},
  };
  return cases;
}

// The bytes a store holds after `rows` (row r of `values`, kv_dim floats) went to slots[r], by
// gguf::quantize_row, the reference both backends must match.
void expect_stored(std::vector<uint8_t>& expected, GgmlType type, int64_t kv_dim,
                   const std::vector<float>& rows, std::span<const int32_t> slots) {
  const uint64_t stride = gguf::row_bytes(type, kv_dim);
  for (size_t r = 0; r < slots.size(); ++r) {
    gguf::quantize_row(type, rows.data() + r * static_cast<size_t>(kv_dim),
                       expected.data() + static_cast<uint64_t>(slots[r]) * stride, kv_dim);
  }
}

// The capture variant of attention writes the softmax weights the kernel used: the same on both
// backends, rows summing to 1, and the attention output unchanged by capturing.
void KernelParity::check_attention_capture(const Pair& q, const KvStore& cpu_store,
                                           const KvStore& vk_store, const AttentionShape& shape,
                                           const AttentionBatch& batch,
                                           const std::vector<float>& expected_out) {
  const int64_t rows = q.cpu.rows;
  const int32_t longest = *std::max_element(batch.positions.begin(), batch.positions.end()) + 1;
  Pair weights{cpu_.create_tensor(rows * shape.n_heads, longest, BufferPurpose::kActivations),
               vk_->create_tensor(rows * shape.n_heads, longest, BufferPurpose::kActivations)};
  Pair out{cpu_.create_tensor(rows, q.cpu.cols, BufferPurpose::kActivations),
           vk_->create_tensor(rows, q.cpu.cols, BufferPurpose::kActivations)};
  cpu_.attention(q.cpu, cpu_store, shape, batch, out.cpu, &weights.cpu);
  vk_->attention(q.vk, vk_store, shape, batch, out.vk, &weights.vk);
  EXPECT_LT(max_abs_difference(cpu_.read(out.cpu), expected_out), 1e-6f) << "cpu output";
  EXPECT_LT(max_abs_difference(vk_->read(out.vk), expected_out), 1e-4f) << "vulkan output";
  const std::vector<float> cpu_weights = cpu_.read(weights.cpu);
  const std::vector<float> vk_weights = vk_->read(weights.vk);
  for (int64_t r = 0; r < rows * shape.n_heads; ++r) {
    const int32_t keys = batch.positions[static_cast<size_t>(r / shape.n_heads)] + 1;
    float cpu_sum = 0.0f, vk_sum = 0.0f, worst = 0.0f;
    for (int32_t t = 0; t < keys; ++t) {
      const auto at = static_cast<size_t>(r * longest + t);
      cpu_sum += cpu_weights[at];
      vk_sum += vk_weights[at];
      worst = std::max(worst, std::abs(cpu_weights[at] - vk_weights[at]));
    }
    EXPECT_LT(worst, 1e-5f) << "weights of row " << r / shape.n_heads << " head "
                            << r % shape.n_heads;
    EXPECT_NEAR(cpu_sum, 1.0f, 1e-5f);
    EXPECT_NEAR(vk_sum, 1.0f, 1e-5f);
  }
}

void KernelParity::check_paged_attention(GgmlType kv_type) {
  float worst = 0.0f;
  uint32_t seed = 1;
  for (const PagedCase& c : paged_cases()) {
    const int64_t kv_dim = c.n_kv_heads * c.head_dim;
    if (kv_type == GgmlType::Q8_0 && kv_dim % 32 != 0) continue;
    SCOPED_TRACE(type_label(kv_type) + " " + c.label());
    // Every position of every sequence gets its own slot, scattered over a larger store.
    int64_t positions = 0;
    for (const SequencePlan& q : c.sequences) positions += q.start + q.added;
    const int64_t store_slots = positions + 5;
    std::vector<int32_t> free_slots(static_cast<size_t>(store_slots));
    std::iota(free_slots.begin(), free_slots.end(), 0);
    if (!c.adjacent_slots) std::shuffle(free_slots.begin(), free_slots.end(), std::mt19937(seed));

    AttentionBatch batch;
    std::vector<int32_t> old_slots, new_slots;
    size_t next_free = 0;
    for (const SequencePlan& q : c.sequences) {
      const auto offset = static_cast<int32_t>(batch.slot_map.size());
      for (int32_t t = 0; t < q.start + q.added; ++t) {
        const int32_t slot = free_slots[next_free++];
        batch.slot_map.push_back(slot);
        if (t < q.start) {
          old_slots.push_back(slot);
        } else {
          new_slots.push_back(slot);
          batch.positions.push_back(t);
          batch.context_offsets.push_back(offset);
        }
      }
    }

    KvStore cpu_store = cpu_.create_kv_store(kv_type, store_slots, kv_dim);
    KvStore vk_store = vk_->create_kv_store(kv_type, store_slots, kv_dim);
    std::vector<uint8_t> expected_keys(gguf::row_bytes(kv_type, kv_dim) *
                                       static_cast<uint64_t>(store_slots));
    std::vector<uint8_t> expected_values = expected_keys;
    // Earlier steps' tokens, then this step's; keys scaled up so the softmax is not flat.
    auto store_rows = [&](std::span<const int32_t> slots) {
      const auto n = static_cast<int64_t>(slots.size());
      if (n == 0) return;
      Pair keys, values;
      if (c.fused_qkv) {
        Pair qkv = random_tensor(n, 3 * kv_dim, seed++, 0, 2.0f);
        keys = {qkv.cpu.columns(kv_dim, kv_dim), qkv.vk.columns(kv_dim, kv_dim)};
        values = {qkv.cpu.columns(2 * kv_dim, kv_dim), qkv.vk.columns(2 * kv_dim, kv_dim)};
      } else {
        keys = random_tensor(n, kv_dim, seed++, 3, 2.0f);
        values = random_tensor(n, kv_dim, seed++);
      }
      cpu_.store_kv(keys.cpu, values.cpu, slots, cpu_store);
      vk_->store_kv(keys.vk, values.vk, slots, vk_store);
      expect_stored(expected_keys, kv_type, kv_dim, cpu_.read(keys.cpu), slots);
      expect_stored(expected_values, kv_type, kv_dim, cpu_.read(values.cpu), slots);
    };
    store_rows(old_slots);
    store_rows(new_slots);

    const auto rows = static_cast<int64_t>(batch.positions.size());
    const int64_t q_pad = seed % 2 == 0 ? 0 : 5;  // dense (vec4) and unaligned column views
    Pair q = random_tensor(rows, c.n_heads * c.head_dim, seed++, q_pad, 2.0f);
    Pair out = random_tensor(rows, c.n_heads * c.head_dim, seed++, q_pad == 0 ? 0 : 1);
    const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, c.scale, c.softcap, c.window};
    cpu_.attention(q.cpu, cpu_store, shape, batch, out.cpu);
    vk_->attention(q.vk, vk_store, shape, batch, out.vk);
    worst = std::max(worst, expect_close(out, 1e-4f, "attention"));
    check_attention_capture(q, cpu_store, vk_store, shape, batch, cpu_.read(out.cpu));
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, false) == expected_keys) << "stored keys";
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, true) == expected_values) << "stored values";
  }
  std::cout << "[ info ] paged attention " << type_label(kv_type)
            << ": largest |vulkan - cpu| = " << worst << "\n";
}

TEST_F(KernelParity, PagedAttentionF32) { check_paged_attention(GgmlType::F32); }
TEST_F(KernelParity, PagedAttentionF16) { check_paged_attention(GgmlType::F16); }
TEST_F(KernelParity, PagedAttentionQ8_0) { check_paged_attention(GgmlType::Q8_0); }

// Quantisation at its edges: zeros (d = 0), exact ties (d = 1, x = k + 0.5), +-127, tiny
// magnitudes (a subnormal fp16 scale), large ones, and one past the F16 range.
TEST_F(KernelParity, StoreKvQuantisesLikeGgmlAtTheEdges) {
  constexpr int64_t kv_dim = 64;
  std::vector<float> rows(6 * kv_dim, 0.0f);  // row 0: all zero
  for (int64_t i = 0; i < kv_dim; ++i) {
    rows[kv_dim + i] = i % 32 == 0 ? 127.0f : static_cast<float>(i % 32) - 12.5f;  // ties
    rows[2 * kv_dim + i] = i % 2 == 0 ? 127.0f : -127.0f;           // d = 1, q = +-127
    rows[3 * kv_dim + i] = 1e-6f * static_cast<float>(i - 31);      // subnormal half scale
    rows[4 * kv_dim + i] = 3e4f * std::sin(static_cast<float>(i));  // large
    rows[5 * kv_dim + i] = 0.5f * static_cast<float>(i % 7) - 1.5f;
  }
  rows[5 * kv_dim] = 1e5f;
  const std::vector<int32_t> slots = {3, 0, 5, 1, 2, 4};
  for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    Tensor keys = vk_->create_tensor(6, kv_dim, BufferPurpose::kActivations);
    vk_->write(keys, rows);
    KvStore store = vk_->create_kv_store(type, 6, kv_dim);
    vk_->store_kv(keys, keys, slots, store);
    std::vector<uint8_t> expected(gguf::row_bytes(type, kv_dim) * 6);
    expect_stored(expected, type, kv_dim, rows, slots);
    EXPECT_TRUE(vk_->read_kv_bytes(store, false) == expected) << type_label(type);
    EXPECT_TRUE(vk_->read_kv_bytes(store, true) == expected) << type_label(type);
  }
}

// Thousands of blocks of magnitudes from 1e-4 to 1e4 hit many roundings of x / d: every
// stored byte equals gguf::quantize_row's (the shader's divisions are correctly rounded).
TEST_F(KernelParity, StoreKvBytesMatchGgmlOnManyBlocks) {
  constexpr int64_t rows = 4096, kv_dim = 64;
  std::vector<float> values = random_values(rows * kv_dim, 77);
  std::mt19937 rng(78);
  std::uniform_real_distribution<float> decades(-4.0f, 4.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = std::pow(10.0f, decades(rng));
    for (int64_t i = 0; i < kv_dim; ++i) values[r * kv_dim + i] *= scale;
  }
  std::vector<int32_t> slots(rows);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  Tensor rows_vk = vk_->create_tensor(rows, kv_dim, BufferPurpose::kActivations);
  vk_->write(rows_vk, values);
  for (const GgmlType type : {GgmlType::F16, GgmlType::Q8_0}) {
    KvStore store = vk_->create_kv_store(type, rows, kv_dim);
    vk_->store_kv(rows_vk, rows_vk, slots, store);
    std::vector<uint8_t> expected(gguf::row_bytes(type, kv_dim) * rows);
    expect_stored(expected, type, kv_dim, values, slots);
    EXPECT_TRUE(vk_->read_kv_bytes(store, false) == expected) << type_label(type);
  }
}

// Two layers in one step share the batch (uploaded once); each reads its own store.
TEST_F(KernelParity, PagedAttentionTwoLayersOneStep) {
  const AttentionShape shape{4, 2, 16};
  const AttentionBatch batch{{0, 1, 2, 4}, {0, 0, 0, 3}, {7, 2, 5, 0, 1, 3, 4, 6}};
  const std::vector<int32_t> new_slots = {7, 2, 5, 6};  // and 0, 1, 3 from an earlier step
  const std::vector<int32_t> old_slots = {0, 1, 3};
  Pair out[2];
  KvStore cpu_stores[2], vk_stores[2];
  for (int layer = 0; layer < 2; ++layer) {
    cpu_stores[layer] = cpu_.create_kv_store(GgmlType::Q8_0, 8, 32);
    vk_stores[layer] = vk_->create_kv_store(GgmlType::Q8_0, 8, 32);
    Pair k_old = random_tensor(3, 32, 50 + layer), v_old = random_tensor(3, 32, 52 + layer);
    cpu_.store_kv(k_old.cpu, v_old.cpu, old_slots, cpu_stores[layer]);
    vk_->store_kv(k_old.vk, v_old.vk, old_slots, vk_stores[layer]);
  }
  vk_->finish();
  for (int layer = 0; layer < 2; ++layer) {  // one step: nothing read until the end
    Pair k = random_tensor(4, 32, 60 + layer), v = random_tensor(4, 32, 62 + layer);
    Pair q = random_tensor(4, 64, 64 + layer);
    out[layer] = random_tensor(4, 64, 66);
    cpu_.store_kv(k.cpu, v.cpu, new_slots, cpu_stores[layer]);
    vk_->store_kv(k.vk, v.vk, new_slots, vk_stores[layer]);
    cpu_.attention(q.cpu, cpu_stores[layer], shape, batch, out[layer].cpu);
    vk_->attention(q.vk, vk_stores[layer], shape, batch, out[layer].vk);
  }
  expect_close(out[0], 1e-4f, "layer 0");
  expect_close(out[1], 1e-4f, "layer 1");
}

// Copy-on-write of KV blocks: a run of slots copied byte for byte, after the store_kv recorded
// before it and before the one recorded after it; the same bytes as the CPU backend's copy.
// Split stores (SplitWeightsAndStaging) copy runs that cross their parts.
void KernelParity::check_copy_kv_slots() {
  for (const auto& [type, store_slots] :
       {std::pair{GgmlType::F32, 20}, std::pair{GgmlType::F16, 40},
        std::pair{GgmlType::Q8_0, 80}}) {
    SCOPED_TRACE(type_label(type));
    KvStore cpu_store = cpu_.create_kv_store(type, store_slots, 32);
    KvStore vk_store = vk_->create_kv_store(type, store_slots, 32);
    std::vector<int32_t> slots(static_cast<size_t>(store_slots));
    std::iota(slots.begin(), slots.end(), 0);
    Pair k = random_tensor(store_slots, 32, 3, 0, 2.0f), v = random_tensor(store_slots, 32, 4);
    cpu_.store_kv(k.cpu, v.cpu, slots, cpu_store);
    vk_->store_kv(k.vk, v.vk, slots, vk_store);
    const std::vector<uint8_t> before = cpu_.read_kv_bytes(cpu_store, false);
    // From slots 1..6 to 12..17: in a split store both runs cross a part boundary.
    const int32_t from = 1, to = 12, count = 6;
    cpu_.copy_kv_slots(cpu_store, from, to, count);
    vk_->copy_kv_slots(vk_store, from, to, count);
    // Written after the copy, into a slot the copy also wrote: this must win.
    Pair k_late = random_tensor(1, 32, 5), v_late = random_tensor(1, 32, 6);
    const std::vector<int32_t> late = {to + 2};
    cpu_.store_kv(k_late.cpu, v_late.cpu, late, cpu_store);
    vk_->store_kv(k_late.vk, v_late.vk, late, vk_store);

    const uint64_t row = gguf::row_bytes(type, 32);
    const std::vector<uint8_t> after = cpu_.read_kv_bytes(cpu_store, false);
    for (int32_t i = 0; i < count; ++i) {
      if (to + i == late[0]) continue;
      EXPECT_TRUE(std::equal(after.begin() + (to + i) * row, after.begin() + (to + i + 1) * row,
                             before.begin() + (from + i) * row))
          << "slot " << to + i;
    }
    EXPECT_FALSE(std::equal(after.begin() + late[0] * row, after.begin() + (late[0] + 1) * row,
                            before.begin() + (from + 2) * row));
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, false) == after);
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, true) == cpu_.read_kv_bytes(cpu_store, true));
    EXPECT_THROW(vk_->copy_kv_slots(vk_store, 0, 3, 5), InputError);  // overlapping runs
    EXPECT_THROW(cpu_.copy_kv_slots(cpu_store, 0, store_slots - 2, 3), InputError);  // outside
  }
}

TEST_F(KernelParity, CopyKvSlots) { check_copy_kv_slots(); }

TEST_F(KernelParity, KvStoreMemoryIsAccountedAsKvCache) {
  const auto kv_bytes = [&] {
    return vk_->memory_usage().bytes_in_use[size_t(BufferPurpose::kKvCache)];
  };
  const uint64_t before = kv_bytes();
  {
    const KvStore store = vk_->create_kv_store(GgmlType::Q8_0, 100, 64);
    EXPECT_GE(kv_bytes(), before + 2 * 100 * gguf::row_bytes(GgmlType::Q8_0, 64));
    EXPECT_EQ(vk_->read_kv_bytes(store, true), std::vector<uint8_t>(100 * 68, 0));  // zeroed
  }
  EXPECT_EQ(kv_bytes(), before);
}

TEST_F(KernelParity, PagedKvRejectsBadShapesAndSlots) {
  EXPECT_THROW(vk_->create_kv_store(GgmlType::Q4_0, 4, 32), InputError);
  EXPECT_THROW(vk_->create_kv_store(GgmlType::Q8_0, 4, 40), InputError);
  KvStore store = vk_->create_kv_store(GgmlType::F16, 4, 8);
  Tensor kv = vk_->create_tensor(1, 8, BufferPurpose::kActivations);
  const std::vector<int32_t> outside = {4};
  EXPECT_THROW(vk_->store_kv(kv, kv, outside, store), InputError);
  Tensor q = vk_->create_tensor(1, 8, BufferPurpose::kActivations);
  const AttentionBatch past_the_map{{2}, {0}, {0, 1}};
  EXPECT_THROW(vk_->attention(q, store, {1, 1, 8}, past_the_map, q), InputError);
}

TEST_F(KernelParity, WriteAndReadViews) {
  Tensor t = vk_->create_tensor(6, 10, BufferPurpose::kScratch);
  EXPECT_EQ(vk_->read(t), std::vector<float>(60, 0.0f));  // non-activation tensors start at 0
  Tensor view = t.columns(2, 5).row_range(1, 4);
  const auto values = random_values(20, 5);
  vk_->write(view, values);
  EXPECT_EQ(vk_->read(view), values);
  EXPECT_EQ(vk_->read(t)[0], 0.0f);
}

TEST_F(KernelParity, TimestampsAndMemoryAccounting) {
  const uint64_t weights_before = vk_->memory_usage().bytes_in_use[size_t(BufferPurpose::kWeights)];
  {
    Pair x = random_tensor(2, 64, 1);
    Pair out = random_tensor(2, 64, 2);
    const auto bytes = random_weight_bytes(GgmlType::Q8_0, 64, 64, 3);
    const WeightMatrix w = vk_->upload_matrix(GgmlType::Q8_0, 64, 64, bytes);
    EXPECT_GE(vk_->memory_usage().bytes_in_use[size_t(BufferPurpose::kWeights)],
              weights_before + bytes.size());
    vk_->matmul(x.vk, w, nullptr, out.vk);
    vk_->gelu(out.vk);
    vk_->read(out.vk);
    const StepTimings& step = vk_->last_step_timings();
    EXPECT_EQ(step.submits, 1u);
    EXPECT_EQ(step.dispatches, 2u);
    if (step.available) {
      ASSERT_EQ(step.kernels.size(), 2u);
      EXPECT_EQ(step.kernels[0].kernel,
                vk_->device().type == "cpu" ? "matmul_lanes_q8_0" : "matmul_vec_q8_0");
      EXPECT_EQ(step.kernels[0].kind, KernelClass::kMatmul);
      EXPECT_EQ(step.kernels[1].kernel, "gelu");
    }
  }
  EXPECT_EQ(vk_->memory_usage().bytes_in_use[size_t(BufferPurpose::kWeights)], weights_before);
}

// Weights larger than one binding are split into chunks of whole rows; a tiny binding limit
// makes every small weight split. Device memory is also left unmapped, which exercises the
// staging copies a discrete GPU needs.
class SplitWeightsAndStaging : public KernelParity {
 protected:
  VulkanBackendOptions options() override {
    VulkanBackendOptions o = KernelParity::options();
    o.max_binding_bytes = 1000;
    o.map_device_memory = false;
    return o;
  }
  void check_split_kv_store();
};

TEST_F(SplitWeightsAndStaging, MatmulAndEmbed) {
  for (const GgmlType type : kAllTypes) {
    const int64_t rows = 45;
    const int64_t cols = 64;  // 1000 bytes hold 3 (F32) to 27 (Q4_0) rows
    const auto bytes = random_weight_bytes(type, rows, cols, 21);
    const WeightMatrix w_cpu = cpu_.upload_matrix(type, rows, cols, bytes);
    const WeightMatrix w_vk = vk_->upload_matrix(type, rows, cols, bytes);
    Pair bias = random_tensor(1, rows, 1);
    for (const int64_t n : {1, 6, 40}) {
      Pair x = random_tensor(n, cols, 2, 1);
      Pair out = random_tensor(n, rows, 3, 2);
      cpu_.matmul(x.cpu, w_cpu, &bias.cpu, out.cpu);
      vk_->matmul(x.vk, w_vk, &bias.vk, out.vk);
      expect_close(out, 1e-4f, type_label(type) + " n=" + std::to_string(n));
    }
    const std::vector<int32_t> ids = {44, 0, 3, 30, 2};
    Pair embedded = random_tensor(5, cols, 4);
    cpu_.embed(w_cpu, ids, embedded.cpu);
    vk_->embed(w_vk, ids, embedded.vk);
    expect_close(embedded, 0.0f, "embed " + type_label(type));
  }
}

TEST_F(SplitWeightsAndStaging, KQuantMatmulAndEmbed) {
  for (const GgmlType type : kKQuantTypes) {
    const int64_t rows = 21;
    const int64_t cols = 256;  // 1000 bytes hold 4 (Q6_K) to 11 (Q2_K) rows
    const auto bytes = random_weight_bytes(type, rows, cols, 41);
    const WeightMatrix w_cpu = cpu_.upload_matrix(type, rows, cols, bytes);
    const WeightMatrix w_vk = vk_->upload_matrix(type, rows, cols, bytes);
    for (const int64_t n : {1, 40}) {
      Pair x = random_tensor(n, cols, 2, 1);
      Pair out = random_tensor(n, rows, 3, 2);
      cpu_.matmul(x.cpu, w_cpu, nullptr, out.cpu);
      vk_->matmul(x.vk, w_vk, nullptr, out.vk);
      expect_close(out, 1e-4f, type_label(type) + " n=" + std::to_string(n));
    }
    const std::vector<int32_t> ids = {20, 0, 3, 11, 2};
    Pair embedded = random_tensor(5, cols, 4);
    cpu_.embed(w_cpu, ids, embedded.cpu);
    vk_->embed(w_vk, ids, embedded.vk);
    expect_close(embedded, 0.0f, "embed " + type_label(type));
  }
}

// A KV store larger than one binding (1000 bytes here) is split into parts of whole slots,
// up to 4 per side; with more it is refused. Each type's store is 3 parts, the slots of both
// sequences are scattered over all of them, and what attention reads and store_kv writes
// matches the CPU backend byte for byte (through staging copies: memory is unmapped here).
void SplitWeightsAndStaging::check_split_kv_store() {
  EXPECT_THROW(vk_->create_kv_store(GgmlType::F32, 40, 32), BackendError);  // 6 parts of 7 slots
  const AttentionShape shape{2, 1, 32};
  // Slots per store: 3 parts of 7 (F32, 128-byte rows), 15 (F16) or 29 (Q8_0) slots.
  for (const auto& [type, store_slots] :
       {std::pair{GgmlType::F32, 20}, std::pair{GgmlType::F16, 40},
        std::pair{GgmlType::Q8_0, 80}}) {
    SCOPED_TRACE(type_label(type));
    std::vector<int32_t> free_slots(static_cast<size_t>(store_slots));
    std::iota(free_slots.begin(), free_slots.end(), 0);
    std::shuffle(free_slots.begin(), free_slots.end(), std::mt19937(store_slots));
    // Sequence a: a prefill of 3/5 of the store; sequence b: its last token decodes after the
    // rest of it was stored in an earlier step.
    const auto prefill = static_cast<size_t>(store_slots * 3 / 5);
    AttentionBatch batch;
    batch.slot_map = free_slots;
    for (size_t t = 0; t < prefill; ++t) {
      batch.positions.push_back(static_cast<int32_t>(t));
      batch.context_offsets.push_back(0);
    }
    batch.positions.push_back(static_cast<int32_t>(free_slots.size() - prefill - 1));
    batch.context_offsets.push_back(static_cast<int32_t>(prefill));
    const std::span<const int32_t> all(free_slots);
    const std::span<const int32_t> earlier = all.subspan(prefill, all.size() - prefill - 1);
    std::vector<int32_t> now(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(prefill));
    now.push_back(all.back());

    KvStore cpu_store = cpu_.create_kv_store(type, store_slots, 32);
    KvStore vk_store = vk_->create_kv_store(type, store_slots, 32);
    std::vector<uint8_t> expected_keys(gguf::row_bytes(type, 32) *
                                       static_cast<uint64_t>(store_slots));
    std::vector<uint8_t> expected_values = expected_keys;
    uint32_t seed = 1;
    for (const std::span<const int32_t> slots : {earlier, std::span<const int32_t>(now)}) {
      const auto n = static_cast<int64_t>(slots.size());
      Pair k = random_tensor(n, 32, seed++, 0, 2.0f), v = random_tensor(n, 32, seed++);
      cpu_.store_kv(k.cpu, v.cpu, slots, cpu_store);
      vk_->store_kv(k.vk, v.vk, slots, vk_store);
      expect_stored(expected_keys, type, 32, cpu_.read(k.cpu), slots);
      expect_stored(expected_values, type, 32, cpu_.read(v.cpu), slots);
    }
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, false) == expected_keys);
    EXPECT_TRUE(vk_->read_kv_bytes(vk_store, true) == expected_values);

    const auto rows = static_cast<int64_t>(now.size());
    Pair q = random_tensor(rows, 64, seed++, 0, 2.0f), out = random_tensor(rows, 64, seed++);
    cpu_.attention(q.cpu, cpu_store, shape, batch, out.cpu);
    vk_->attention(q.vk, vk_store, shape, batch, out.vk);
    expect_close(out, 1e-4f, "attention");
    check_attention_capture(q, cpu_store, vk_store, shape, batch, cpu_.read(out.cpu));
  }
}

TEST_F(SplitWeightsAndStaging, PagedKvStore) { check_split_kv_store(); }
TEST_F(SplitWeightsAndStaging, CopyKvSlotsAcrossParts) { check_copy_kv_slots(); }

// The same split store with the GPU kernels (attention.comp).
class SplitKvStoreWorkgroupTiles : public SplitWeightsAndStaging {
 protected:
  VulkanBackendOptions options() override {
    VulkanBackendOptions o = SplitWeightsAndStaging::options();
    o.kernel_style = KernelStyle::kWorkgroupTiles;
    return o;
  }
};
TEST_F(SplitKvStoreWorkgroupTiles, PagedKvStore) { check_split_kv_store(); }

// The probe measures positive roofs once, then the cache answers for the same device.
TEST_F(KernelParity, DeviceProbeIsCachedPerDevice) {
  const auto dir =
      std::filesystem::path(testing::TempDir()) / ("servescope-probe-" + std::to_string(getpid()));
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const ProbedRoofs first = probe_roofs(*vk_);
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.roofs.memory_gb_per_s, 0.0);
  EXPECT_GT(first.roofs.compute_gflop_per_s, 0.0);
  const ProbedRoofs second = probe_roofs(*vk_);
  EXPECT_TRUE(second.from_cache);
  EXPECT_NEAR(second.roofs.memory_gb_per_s, first.roofs.memory_gb_per_s,
              1e-6 * first.roofs.memory_gb_per_s);
  EXPECT_EQ(second.cache_file.parent_path(), dir / "servescope");
  unsetenv("XDG_CACHE_HOME");
  std::filesystem::remove_all(dir);
}

// Without a Vulkan loader the program still starts: the Vulkan backend is a one-line error
// naming what to install, the CPU backend works. (A child process: the loader is loaded once
// per process.)
TEST(VulkanLoader, MissingLoaderIsAClearErrorNotACrash) {
  const std::string cli = std::string(SERVESCOPE_BIN_DIR) + "/servescope-cli";
  const std::string model = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf";
  auto run = [&](const std::string& backend, std::string& output) {
    const std::string command = "SERVESCOPE_VULKAN_LIBRARY=/nonexistent/libvulkan.so.1 " + cli +
                                " info --model " + model + " --backend " + backend + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    char buffer[4096];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    return pclose(pipe);
  };
  std::string vulkan_output, cpu_output;
  EXPECT_NE(run("vulkan", vulkan_output), 0);
  EXPECT_NE(vulkan_output.find("Vulkan loader"), std::string::npos) << vulkan_output;
  EXPECT_NE(vulkan_output.find("--backend cpu"), std::string::npos) << vulkan_output;
  EXPECT_EQ(run("cpu", cpu_output), 0) << cpu_output;
}

// --- failures during a step: out of device memory, device lost -----------------------------

// A small product on `vk` against the CPU backend: the backend still computes correctly.
void expect_small_matmul_matches_cpu(Backend& backend) {
  CpuBackend cpu;
  const auto bytes = random_weight_bytes(GgmlType::Q8_0, 40, 64, 5);
  const std::vector<float> values = random_values(12 * 64, 6);
  std::vector<float> results[2];
  Backend* backends[2] = {&cpu, &backend};
  for (int i = 0; i < 2; ++i) {
    const WeightMatrix w = backends[i]->upload_matrix(GgmlType::Q8_0, 40, 64, bytes);
    Tensor x = backends[i]->create_tensor(12, 64, BufferPurpose::kActivations);
    backends[i]->write(x, values);
    Tensor out = backends[i]->create_tensor(12, 40, BufferPurpose::kActivations);
    backends[i]->matmul(x, w, nullptr, out);
    results[i] = backends[i]->read(out);
  }
  EXPECT_LE(max_abs_difference(results[1], results[0]), 1e-4f);
}

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const BackendError& e) {
    return e.what();
  }
  return "(no BackendError)";
}

// Every failed VkResult becomes a BackendError naming the call, the result and the way out.
TEST(VulkanFailures, VkResultsBecomeMessagesAPersonCanActOn) {
  const std::string lost = message_of([] { check(VK_ERROR_DEVICE_LOST, "running a step"); });
  EXPECT_EQ(lost,
            "Vulkan: running a step failed: VK_ERROR_DEVICE_LOST (the device was lost; restart "
            "with --backend cpu)");
  const std::string full =
      message_of([] { check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating 64 MiB"); });
  EXPECT_NE(full.find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos) << full;
  EXPECT_NE(full.find("--backend cpu"), std::string::npos) << full;
  const std::string odd = message_of([] { check(static_cast<VkResult>(-1234), "x"); });
  EXPECT_NE(odd.find("(-1234)"), std::string::npos) << odd;
  EXPECT_NO_THROW(check(VK_SUCCESS, "x"));
}

// Asking for more memory than the device (here: a budget of one 64 MiB block) can give is a
// BackendError that says what failed and what to do; nothing is half-allocated and the
// backend keeps working.
TEST(VulkanFailures, OutOfDeviceMemoryIsAClearErrorAndTheBackendStaysUsable) {
  SERVESCOPE_SKIP_WITHOUT_VULKAN();
  enable_validation();
  VulkanBackendOptions options;
  options.device_memory_budget = kDefaultBlockBytes;
  VulkanBackend vk(options);
  expect_small_matmul_matches_cpu(vk);
  const MemoryUsage before = vk.memory_usage();

  const int64_t side = 4500;  // 81 MB of F32 weights: within one binding, beyond the budget
  const std::vector<uint8_t> too_big(static_cast<size_t>(side * side) * sizeof(float), 0);
  const std::string weights_error =
      message_of([&] { vk.upload_matrix(GgmlType::F32, side, side, too_big); });
  EXPECT_NE(weights_error.find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos)
      << weights_error;
  EXPECT_NE(weights_error.find("--backend cpu"), std::string::npos) << weights_error;
  // Mid-step: a product is recorded, then the step's next tensor does not fit. The step
  // fails and is dropped; `out` keeps what it held before.
  const auto small = random_weight_bytes(GgmlType::F32, 8, 16, 3);
  const WeightMatrix w = vk.upload_matrix(GgmlType::F32, 8, 16, small);
  Tensor x = vk.create_tensor(2, 16, BufferPurpose::kActivations);
  vk.write(x, random_values(2 * 16, 4));
  Tensor out = vk.create_tensor(2, 8, BufferPurpose::kActivations);
  const std::vector<float> before_step(16, 7.0f);
  vk.write(out, before_step);
  vk.matmul(x, w, nullptr, out);
  const std::string tensor_error =
      message_of([&] { vk.create_tensor(side, side, BufferPurpose::kActivations); });
  EXPECT_NE(tensor_error.find("MiB of device memory"), std::string::npos) << tensor_error;
  EXPECT_EQ(vk.read(out), before_step);

  EXPECT_EQ(vk.memory_usage().blocks, before.blocks);
  expect_small_matmul_matches_cpu(vk);
  expect_validation_clean(vk.validation_log());
}

// A lost device (simulated: the next submit reports VK_ERROR_DEVICE_LOST) fails the step with
// a BackendError that says so; every later call fails the same way instead of crashing or
// returning stale data; destruction is safe; the CPU backend computes on.
TEST(VulkanFailures, LostDeviceFailsEveryLaterCallAndTheCpuBackendTakesOver) {
  SERVESCOPE_SKIP_WITHOUT_VULKAN();
  enable_validation();
  auto vk = std::make_unique<VulkanBackend>();
  const auto bytes = random_weight_bytes(GgmlType::F16, 16, 32, 1);
  const WeightMatrix w = vk->upload_matrix(GgmlType::F16, 16, 32, bytes);
  Tensor x = vk->create_tensor(3, 32, BufferPurpose::kActivations);
  vk->write(x, random_values(3 * 32, 2));
  Tensor out = vk->create_tensor(3, 16, BufferPurpose::kActivations);

  vk->simulate_device_lost_after(0);
  vk->matmul(x, w, nullptr, out);
  const std::string step_error = message_of([&] { vk->read(out); });
  EXPECT_NE(step_error.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << step_error;
  EXPECT_NE(step_error.find("--backend cpu"), std::string::npos) << step_error;

  const std::string later_error = message_of([&] {
    vk->matmul(x, w, nullptr, out);
    vk->read(out);
  });
  EXPECT_NE(later_error.find("device was lost"), std::string::npos) << later_error;
  EXPECT_NE(message_of([&] { vk->read(out); }).find("device was lost"), std::string::npos);
  EXPECT_NE(
      message_of([&] { vk->upload_matrix(GgmlType::F16, 16, 32, bytes); }).find("device was lost"),
      std::string::npos);
  expect_validation_clean(vk->validation_log());
  vk.reset();  // buffers (x, out, w) outlive the backend: still safe

  CpuBackend cpu;
  expect_small_matmul_matches_cpu(cpu);
}

// The CLI contract when Vulkan fails in the middle of a run: a one-line reason on stderr that
// names the way out, a non-zero exit code, no crash (docs/ARCHITECTURE.md: never abort, never
// crash).
TEST(VulkanFailures, CliReportsALostDeviceMidRunAndExitsNonZero) {
  SERVESCOPE_SKIP_WITHOUT_VULKAN();
  const std::string cli = std::string(SERVESCOPE_BIN_DIR) + "/servescope-cli";
  const std::string model = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf";
  // Loading takes a few dozen submits; the 60th comes during generation.
  const std::string command = "SERVESCOPE_VULKAN_SIMULATE_DEVICE_LOST=60 " + cli +
                              " generate --model " + model +
                              " --prompt 'Once upon a time' --max-tokens 100 --greedy --no-stop"
                              " --backend vulkan 2>&1 >/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string errors;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) errors += buffer;
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << "the CLI crashed: " << errors;
  EXPECT_EQ(WEXITSTATUS(status), 1) << errors;
  EXPECT_NE(errors.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << errors;
  EXPECT_NE(errors.find("--backend cpu"), std::string::npos) << errors;
}

TEST(VulkanDevices, ListingAndChoice) {
  SERVESCOPE_SKIP_WITHOUT_VULKAN();
  const auto devices = list_devices();
  ASSERT_FALSE(devices.empty());
  const uint32_t chosen = choose_device(devices);
  EXPECT_TRUE(devices[chosen].has_compute_queue);
  // A discrete GPU wins over a CPU implementation regardless of order.
  std::vector<DeviceDescription> fake(2);
  fake[0].type = "cpu";
  fake[1].type = "discrete";
  fake[0].has_compute_queue = fake[1].has_compute_queue = true;
  EXPECT_EQ(choose_device(fake), 1u);
  ContextOptions bad;
  bad.device_index = static_cast<uint32_t>(devices.size());
  EXPECT_THROW(VulkanContext{bad}, BackendError);
}

}  // namespace
}  // namespace servescope::compute::vulkan
