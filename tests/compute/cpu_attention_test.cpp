// The CPU backend's attention, prefill's tiles (many query rows of a sequence) and decode's
// rows: against a double-precision reference on the stored (converted) keys and values, for
// grouped KV heads, a score scale, soft-cap and sliding window, F32 / F16 / Q8_0 stores and
// scattered slots; the same bits for any thread count and for a sequence alone or in a batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/compute/cpu_backend.h"

namespace servescope::compute {
namespace {

using gguf::GgmlType;

struct Sequence {
  int32_t start = 0;  // positions already in the store
  int32_t added = 0;  // query rows of this step
};

struct Case {
  AttentionShape shape;
  std::vector<Sequence> sequences;
  std::string label;
};

std::vector<Case> cases() {
  return {
      {{4, 2, 64}, {{0, 37}, {5, 20}, {30, 1}}, "gqa prefill, chunk, decode"},
      {{4, 4, 32, 0.3f}, {{0, 17}}, "one head per KV head, scale"},
      {{6, 2, 32, 0.0f, 2.0f}, {{0, 40}, {3, 1}}, "soft-cap"},
      {{4, 1, 64, 0.0f, 0.0f, 9}, {{0, 33}, {12, 8}}, "sliding window"},
      {{4, 2, 16}, {{0, 19}}, "heads of 16 (Q8_0: not whole blocks)"},
      {{4, 1, 64, 0.0f, 0.0f, 9}, {{20, 1}, {0, 5}}, "sliding window, decode rows"},
      {{6, 2, 48}, {{10, 1}, {0, 3}}, "heads of 48, three per KV head, decode rows"},
      // Fewer rows than threads: the KV heads split over the threads (one thread: not).
      {{4, 2, 64}, {{25, 1}}, "a lone decode row"},
      {{6, 3, 32, 0.0f, 2.0f}, {{40, 1}}, "a lone decode row, three KV heads, soft-cap"},
  };
}

// What one attention call needs: a batch of sequences on scattered slots of a store holding
// random keys and values, and random queries.
struct Problem {
  AttentionBatch batch;
  KvStore store;
  Tensor q;
  int64_t rows = 0;
};

Problem make_problem(CpuBackend& backend, const Case& c, GgmlType kv_type) {
  const int64_t kv_dim = c.shape.n_kv_heads * c.shape.head_dim;
  int64_t positions = 0;
  for (const Sequence& s : c.sequences) positions += s.start + s.added;
  std::vector<int32_t> free_slots(static_cast<size_t>(positions + 3));
  std::iota(free_slots.begin(), free_slots.end(), 0);
  std::shuffle(free_slots.begin(), free_slots.end(), std::mt19937(7));
  Problem p;
  p.store = backend.create_kv_store(kv_type, positions + 3, kv_dim);
  size_t next = 0;
  for (const Sequence& s : c.sequences) {
    const auto offset = static_cast<int32_t>(p.batch.slot_map.size());
    for (int32_t t = 0; t < s.start + s.added; ++t) {
      p.batch.slot_map.push_back(free_slots[next++]);
      if (t >= s.start) {
        p.batch.positions.push_back(t);
        p.batch.context_offsets.push_back(offset);
      }
    }
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random = [&](int64_t rows, int64_t cols, float scale) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = scale * normal(rng);
    Tensor t = backend.create_tensor(rows, cols, BufferPurpose::kActivations);
    backend.write(t, v);
    return t;
  };
  const auto slots = static_cast<int64_t>(p.batch.slot_map.size());
  backend.store_kv(random(slots, kv_dim, 2.0f), random(slots, kv_dim, 1.0f), p.batch.slot_map,
                   p.store);
  p.rows = static_cast<int64_t>(p.batch.positions.size());
  p.q = random(p.rows, c.shape.n_heads * c.shape.head_dim, 1.0f);
  return p;
}

// Softmax-weighted values in double precision from the store's converted rows; also the
// weights, [rows * n_heads][longest context].
std::vector<double> reference(CpuBackend& backend, const Problem& p, const AttentionShape& shape,
                              int64_t longest, std::vector<double>& weights) {
  const int64_t d = shape.head_dim;
  const int64_t kv_dim = p.store.kv_dim;
  const auto convert = [&](bool values) {
    const std::vector<uint8_t> bytes = backend.read_kv_bytes(p.store, values);
    std::vector<float> rows(static_cast<size_t>(p.store.slots * kv_dim));
    const uint64_t stride = gguf::row_bytes(p.store.type, kv_dim);
    for (int64_t s = 0; s < p.store.slots; ++s) {
      gguf::dequantize_row(p.store.type, bytes.data() + static_cast<uint64_t>(s) * stride,
                           rows.data() + s * kv_dim, kv_dim);
    }
    return rows;
  };
  const std::vector<float> keys = convert(false);
  const std::vector<float> values = convert(true);
  const std::vector<float> q = backend.read(p.q);
  std::vector<double> out(static_cast<size_t>(p.rows * shape.n_heads * d), 0.0);
  weights.assign(static_cast<size_t>(p.rows * shape.n_heads * longest), 0.0);
  const int64_t group = shape.n_heads / shape.n_kv_heads;
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t n_keys = p.batch.positions[static_cast<size_t>(i)] + 1;
    const int64_t first = shape.window > 0 ? std::max<int64_t>(0, n_keys - shape.window) : 0;
    const int32_t* slot = p.batch.slot_map.data() + p.batch.context_offsets[static_cast<size_t>(i)];
    for (int64_t h = 0; h < shape.n_heads; ++h) {
      const int64_t kv_col = (h / group) * d;
      std::vector<double> scores(static_cast<size_t>(n_keys), 0.0);
      double max_score = -INFINITY;
      for (int64_t t = first; t < n_keys; ++t) {
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c) {
          dot += double(q[static_cast<size_t>(i * shape.n_heads * d + h * d + c)]) *
                 keys[static_cast<size_t>(slot[t] * kv_dim + kv_col + c)];
        }
        double s = dot * shape.score_scale();
        if (shape.softcap > 0.0f) s = shape.softcap * std::tanh(s / shape.softcap);
        scores[static_cast<size_t>(t)] = s;
        max_score = std::max(max_score, s);
      }
      double sum = 0.0;
      for (int64_t t = first; t < n_keys; ++t) {
        scores[static_cast<size_t>(t)] = std::exp(scores[static_cast<size_t>(t)] - max_score);
        sum += scores[static_cast<size_t>(t)];
      }
      for (int64_t t = first; t < n_keys; ++t) {
        const double w = scores[static_cast<size_t>(t)] / sum;
        weights[static_cast<size_t>((i * shape.n_heads + h) * longest + t)] = w;
        for (int64_t c = 0; c < d; ++c) {
          out[static_cast<size_t>(i * shape.n_heads * d + h * d + c)] +=
              w * values[static_cast<size_t>(slot[t] * kv_dim + kv_col + c)];
        }
      }
    }
  }
  return out;
}

int64_t longest_context(const AttentionBatch& batch) {
  return *std::max_element(batch.positions.begin(), batch.positions.end()) + 1;
}

class CpuAttention : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CpuAttention, MatchesADoubleReferenceWithTheSameBitsOnOneTwoThreeThreads) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    std::vector<float> first_out, first_weights;
    for (const int threads : {1, 2, 3}) {
      CpuBackend backend(threads);
      const Problem p = make_problem(backend, c, GetParam());
      const int64_t longest = longest_context(p.batch);
      Tensor out = backend.create_tensor(p.rows, p.q.cols, BufferPurpose::kActivations);
      Tensor weights =
          backend.create_tensor(p.rows * c.shape.n_heads, longest, BufferPurpose::kActivations);
      backend.attention(p.q, p.store, c.shape, p.batch, out, &weights);
      const std::vector<float> got = backend.read(out);
      std::vector<float> got_weights = backend.read(weights);
      // Columns past a row's own position are not the kernel's (left as they were).
      for (int64_t r = 0; r < p.rows * c.shape.n_heads; ++r) {
        const int32_t position = p.batch.positions[static_cast<size_t>(r / c.shape.n_heads)];
        std::fill(got_weights.begin() + r * longest + position + 1,
                  got_weights.begin() + (r + 1) * longest, 0.0f);
      }
      if (threads == 1) {
        std::vector<double> expected_weights;
        const std::vector<double> expected =
            reference(backend, p, c.shape, longest, expected_weights);
        for (size_t k = 0; k < got.size(); ++k) {
          ASSERT_NEAR(got[k], expected[k], 2e-5) << "output " << k;
        }
        for (size_t k = 0; k < got_weights.size(); ++k) {
          ASSERT_NEAR(got_weights[k], expected_weights[k], 2e-6) << "weight " << k;
        }
        first_out = got;
        first_weights = got_weights;
      } else {
        EXPECT_EQ(got, first_out) << threads << " threads";
        EXPECT_EQ(got_weights, first_weights) << threads << " threads";
      }
    }
  }
}

TEST_P(CpuAttention, EachSequenceGetsTheBitsItGetsAlone) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    CpuBackend backend(2);
    const Problem p = make_problem(backend, c, GetParam());
    Tensor out = backend.create_tensor(p.rows, p.q.cols, BufferPurpose::kActivations);
    backend.attention(p.q, p.store, c.shape, p.batch, out);
    const std::vector<float> together = backend.read(out);
    // Each sequence's rows alone: its own slots, offsets from 0.
    int64_t row = 0;
    int32_t offset = 0;
    for (const Sequence& s : c.sequences) {
      AttentionBatch alone;
      alone.slot_map.assign(p.batch.slot_map.begin() + offset,
                            p.batch.slot_map.begin() + offset + s.start + s.added);
      for (int32_t t = s.start; t < s.start + s.added; ++t) {
        alone.positions.push_back(t);
        alone.context_offsets.push_back(0);
      }
      const Tensor q = p.q.row_range(row, s.added);
      Tensor out_alone = backend.create_tensor(s.added, p.q.cols, BufferPurpose::kActivations);
      backend.attention(q, p.store, c.shape, alone, out_alone);
      const std::vector<float> got = backend.read(out_alone);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), together.begin() + row * p.q.cols))
          << "sequence at row " << row;
      row += s.added;
      offset += s.start + s.added;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, CpuAttention,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::Q8_0),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

}  // namespace
}  // namespace servescope::compute
