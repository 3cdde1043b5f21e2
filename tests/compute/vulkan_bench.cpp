// servescope-vulkan-bench: measures the Vulkan backend on this machine's device and prints
// JSON. Not a test (timings live in benchmarks): matrix-vector GB/s and matrix-matrix GFLOP/s
// per weight type at 768x768 and 4096x4096 (and a model's shapes with --model), each as a
// fraction of the device probe's measured roofs; per-dispatch overhead; and with --model,
// end-to-end prefill and decode tokens/s on Vulkan and on the CPU backend.
//
//   servescope-vulkan-bench [--model M.gguf] [--quick] [--fresh-probe] [--products-only]
//                           [--baseline] [--attention-only] [--capture-ab] [--spans-ab]
//                           [--dispatch-cost] [--k-quants]
// --baseline: on a CPU device, also time the matrix products with matmul_vec (decode, and
// prefill in passes; VulkanBackendOptions::subgroup_matmul = false), alternating with the
// current kernels, so the two compare under the same machine load.
// --products-only: only the matrix products (no dispatch overhead, no end-to-end runs), for
// quick A/B runs of kernel changes.
// --attention-only: only the paged attention kernel's time per KV type (F32, F16, Q8_0), at
// contexts of 256 and 1024 keys, for 1 and 4 sequences.
// --capture-ab (with --model): prefill and decode with attention capture off, one head, and
// every layer and head, interleaved, on the CPU and Vulkan backends.
// --spans-ab (with --model): prefill and decode on Vulkan with per-dispatch spans off and on,
// interleaved.
// --dispatch-cost (with --model): a tiny dispatch's cost, the dispatches of a decode step, the
// step's wall time and the device time inside its kernels (is decode dispatch bound?).
// --k-quants: the matrix products for Q4_0 and the K-quants Q2_K .. Q6_K instead of F32, F16,
// Q8_0, Q4_0 (shapes whose inner size is not whole 256-element super-blocks only for Q4_0).
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "engine/compute/vulkan/device_probe.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope::compute::vulkan {
namespace {

using json = nlohmann::json;
using gguf::GgmlType;
using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<uint8_t> random_weight_bytes(GgmlType type, int64_t rows, int64_t cols) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> row(static_cast<size_t>(cols));
  const uint64_t row_bytes = gguf::row_bytes(type, cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng);
    gguf::quantize_row(type, row.data(), bytes.data() + r * row_bytes, cols);
  }
  return bytes;
}

// GPU milliseconds of the matmul kernels in the last step (wall time without timestamps).
double matmul_ms(const VulkanBackend& vk, double wall_ms) {
  const StepTimings& step = vk.last_step_timings();
  if (!step.available) return wall_ms;
  return step.class_milliseconds[static_cast<size_t>(KernelClass::kMatmul)];
}

// CPU time of this process (all threads): on a CPU device (lavapipe) the work a kernel did,
// which other processes on a busy machine slow down less than they do wall time.
double process_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) * 1e-3;
  };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

struct ProductResult {
  double gpu_ms = 0.0;   // best kernel time
  double wall_ms = 0.0;  // best step wall time (record + submit + wait + read of one value)
  double cpu_ms = 0.0;   // least process CPU time of a step
};

ProductResult time_product(VulkanBackend& vk, const WeightMatrix& w, int64_t tokens, int runs) {
  Tensor x = vk.create_tensor(tokens, w.cols, BufferPurpose::kActivations);
  std::vector<float> values(static_cast<size_t>(tokens * w.cols), 0.01f);
  vk.write(x, values);
  Tensor out = vk.create_tensor(tokens, w.rows, BufferPurpose::kActivations);
  ProductResult best{INFINITY, INFINITY, INFINITY};
  for (int run = 0; run < runs + 1; ++run) {  // the first run warms up (pipeline creation)
    const auto start = Clock::now();
    const double cpu_start = process_cpu_ms();
    vk.matmul(x, w, nullptr, out);
    vk.read(out.row_range(0, 1).columns(0, 1));
    const double wall = milliseconds_since(start);
    if (run == 0) continue;
    best.cpu_ms = std::min(best.cpu_ms, process_cpu_ms() - cpu_start);
    best.wall_ms = std::min(best.wall_ms, wall);
    best.gpu_ms = std::min(best.gpu_ms, matmul_ms(vk, wall));
  }
  return best;
}

// Matrix-matrix GFLOP/s of `tokens` tokens, best of `runs`; `baseline` (when given) is timed
// in alternation with `vk`, so both see the same machine load.
struct MatmatResult {
  ProductResult best, baseline;
};
MatmatResult time_matmat(VulkanBackend& vk, const WeightMatrix& w, VulkanBackend* baseline,
                         const WeightMatrix* baseline_w, int64_t tokens, int runs) {
  MatmatResult result{{INFINITY, INFINITY, INFINITY}, {INFINITY, INFINITY, INFINITY}};
  const auto keep_best = [](ProductResult& best, const ProductResult& run) {
    best.gpu_ms = std::min(best.gpu_ms, run.gpu_ms);
    best.wall_ms = std::min(best.wall_ms, run.wall_ms);
    best.cpu_ms = std::min(best.cpu_ms, run.cpu_ms);
  };
  for (int run = 0; run < runs; ++run) {
    keep_best(result.best, time_product(vk, w, tokens, 1));
    if (baseline != nullptr) {
      keep_best(result.baseline, time_product(*baseline, *baseline_w, tokens, 1));
    }
  }
  return result;
}

// `baseline`: the same device with the previous prefill kernel (CPU devices: matmul_vec in
// passes of 8 tokens instead of matmul_lanes), or null.
json products(VulkanBackend& vk, VulkanBackend* baseline, const DeviceRoofs& roofs,
              const std::vector<std::pair<int64_t, int64_t>>& shapes,
              const std::vector<GgmlType>& types, bool quick) {
  json rows = json::array();
  for (const auto& [out_features, in_features] : shapes) {
    for (const GgmlType type : types) {
      if (in_features % gguf::block_elements(type) != 0) continue;
      const auto bytes = random_weight_bytes(type, out_features, in_features);
      const WeightMatrix w = vk.upload_matrix(type, out_features, in_features, bytes);
      std::optional<WeightMatrix> baseline_w;
      if (baseline != nullptr) {
        baseline_w = baseline->upload_matrix(type, out_features, in_features, bytes);
      }
      const MatmatResult vecs =
          time_matmat(vk, w, baseline, baseline_w ? &*baseline_w : nullptr, 1, quick ? 3 : 10);
      const ProductResult& vec = vecs.best;
      const double gb_per_s = double(bytes.size()) / (vec.gpu_ms * 1e6);
      const int64_t tokens = 128;
      const bool big = out_features * in_features > (int64_t{1} << 22);
      const MatmatResult mat =
          time_matmat(vk, w, baseline, baseline_w ? &*baseline_w : nullptr, tokens,
                      big     ? 2
                      : quick ? 3
                              : 5);
      const double flop = 2.0 * double(tokens * out_features * in_features);
      const double gflop_per_s = flop / (mat.best.gpu_ms * 1e6);
      json row = {{"shape", std::to_string(out_features) + "x" + std::to_string(in_features)},
                  {"type", gguf::type_name(type)},
                  {"weight_bytes", bytes.size()},
                  {"matvec_ms", vec.gpu_ms},
                  {"matvec_step_wall_ms", vec.wall_ms},
                  {"matvec_gb_per_s", gb_per_s},
                  {"matvec_fraction_of_stream_roof", gb_per_s / roofs.memory_gb_per_s},
                  {"matmat_tokens", tokens},
                  {"matmat_ms", mat.best.gpu_ms},
                  {"matmat_process_cpu_ms", mat.best.cpu_ms},
                  {"matmat_gflop_per_s", gflop_per_s},
                  {"matmat_fraction_of_compute_roof", gflop_per_s / roofs.compute_gflop_per_s}};
      if (baseline != nullptr) {
        row["baseline_matmat_ms"] = mat.baseline.gpu_ms;
        row["baseline_matmat_process_cpu_ms"] = mat.baseline.cpu_ms;
        row["baseline_matmat_gflop_per_s"] = flop / (mat.baseline.gpu_ms * 1e6);
        const double baseline_gb_per_s = double(bytes.size()) / (vecs.baseline.gpu_ms * 1e6);
        row["baseline_matvec_gb_per_s"] = baseline_gb_per_s;
        row["baseline_matvec_fraction_of_stream_roof"] = baseline_gb_per_s / roofs.memory_gb_per_s;
      }
      rows.push_back(row);
      std::cerr << rows.back().dump() << "\n";
    }
  }
  return rows;
}

// Paged attention kernel time per KV type: `queries` sequences of `context` keys each (the
// bundled model's heads: 4 query heads over 2 KV heads of 64), slots scattered over the store,
// best of `runs`. Decode of one sequence is queries = 1.
json attention_times(VulkanBackend& vk, int runs) {
  const AttentionShape shape{4, 2, 64};
  const int64_t kv_dim = shape.n_kv_heads * shape.head_dim;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random_tensor = [&](int64_t rows, int64_t cols) {
    Tensor t = vk.create_tensor(rows, cols, BufferPurpose::kActivations);
    std::vector<float> values(static_cast<size_t>(rows * cols));
    for (float& v : values) v = normal(rng);
    vk.write(t, values);
    return t;
  };
  json rows = json::array();
  for (const int64_t context : {256, 1024}) {
    for (const int64_t queries : {1, 4}) {
      std::vector<int32_t> slots(static_cast<size_t>(context));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      AttentionBatch batch;
      for (int64_t i = 0; i < queries; ++i) {
        batch.positions.push_back(static_cast<int32_t>(context - 1));
        batch.context_offsets.push_back(static_cast<int32_t>(batch.slot_map.size()));
        batch.slot_map.insert(batch.slot_map.end(), slots.begin(), slots.end());
      }
      const Tensor keys = random_tensor(context, kv_dim);
      const Tensor values = random_tensor(context, kv_dim);
      const Tensor q = random_tensor(queries, shape.n_heads * shape.head_dim);
      Tensor out = vk.create_tensor(queries, q.cols, BufferPurpose::kActivations);
      for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
        KvStore store = vk.create_kv_store(type, context, kv_dim);
        vk.store_kv(keys, values, slots, store);
        double best_ms = INFINITY;
        for (int run = 0; run < runs + 1; ++run) {  // the first run warms up
          const auto start = Clock::now();
          vk.attention(q, store, shape, batch, out);
          vk.read(out.columns(0, 1));
          const double wall = milliseconds_since(start);
          const StepTimings& step = vk.last_step_timings();
          const double ms =
              step.available ? step.class_milliseconds[static_cast<size_t>(KernelClass::kAttention)]
                             : wall;
          if (run > 0) best_ms = std::min(best_ms, ms);
        }
        rows.push_back({{"kv_type", gguf::type_name(type)},
                        {"context", context},
                        {"queries", queries},
                        {"attention_ms", best_ms}});
        std::cerr << rows.back().dump() << "\n";
      }
    }
  }
  return rows;
}

// Cost of recording, submitting and waiting for many tiny dependent dispatches in one step:
// adds of `cols` floats, one workgroup per 64 (lavapipe hands workgroups to its threads, so 16
// of them show what spreading a dispatch over the cores costs).
json dispatch_overhead(VulkanBackend& vk, const std::string& label, int64_t cols = 64) {
  Tensor x = vk.create_tensor(1, cols, BufferPurpose::kScratch);
  Tensor y = vk.create_tensor(1, cols, BufferPurpose::kScratch);
  constexpr int kDispatches = 200;
  double best_ms = INFINITY, best_empty_ms = INFINITY;
  for (int run = 0; run < 4; ++run) {
    auto start = Clock::now();
    for (int i = 0; i < kDispatches; ++i) vk.add(x, y);
    vk.read(x.columns(0, 1));
    if (run > 0) best_ms = std::min(best_ms, milliseconds_since(start));
    start = Clock::now();
    vk.gelu(y);  // a one-dispatch step: the floor of a submit and wait
    vk.read(y.columns(0, 1));
    if (run > 0) best_empty_ms = std::min(best_empty_ms, milliseconds_since(start));
  }
  return {{"timestamps", label},
          {"workgroups", (cols + 63) / 64},
          {"microseconds_per_dispatch", best_ms * 1000.0 / kDispatches},
          {"one_dispatch_step_microseconds", best_empty_ms * 1000.0}};
}

// Wall time per dispatch of small decode-sized operations, 100 of one kind in one step.
json small_ops(VulkanBackend& vk) {
  constexpr int kOps = 100;
  Tensor x = vk.create_tensor(1, 256, BufferPurpose::kScratch);
  Tensor y = vk.create_tensor(1, 256, BufferPurpose::kScratch);
  Tensor w = vk.create_tensor(1, 256, BufferPurpose::kScratch);
  Tensor out = vk.create_tensor(1, 256, BufferPurpose::kScratch);
  auto time_ops = [&](const std::function<void()>& op) {
    double best = INFINITY;
    for (int run = 0; run < 3; ++run) {
      vk.finish();
      const auto start = Clock::now();
      for (int i = 0; i < kOps; ++i) op();
      vk.finish();
      best = std::min(best, milliseconds_since(start) * 1000.0 / kOps);
    }
    return best;
  };
  return {{"gelu_us", time_ops([&] { vk.gelu(x); })},
          {"rms_norm_us", time_ops([&] { vk.rms_norm(x, w, 1e-5f, out); })},
          {"add_rms_norm_us", time_ops([&] { vk.add_rms_norm(x, y, w, 1e-5f, out); })}};
}

// Where a step's device time went: per kernel class and per kernel (pipeline name).
json step_breakdown(const StepTimings& step) {
  std::map<std::string, double> per_kernel;
  for (const KernelTiming& k : step.kernels) per_kernel[k.kernel] += k.milliseconds;
  return {{"dispatches", step.dispatches},
          {"gpu_ms", step.gpu_milliseconds},
          {"matmul_ms", step.class_milliseconds[0]},
          {"attention_ms", step.class_milliseconds[1]},
          {"norm_ms", step.class_milliseconds[2]},
          {"other_ms", step.class_milliseconds[3]},
          {"per_kernel_ms", per_kernel}};
}

json end_to_end(const std::string& path, BackendKind kind, int prompt_tokens, int decode_tokens) {
  auto m = model::load_model(path, kind);
  serving::EngineRequest request;
  request.max_tokens = decode_tokens + 1;
  const int64_t context = m->config.context_length;
  prompt_tokens = static_cast<int>(std::min<int64_t>(prompt_tokens, context - request.max_tokens));
  for (int i = 0; i < prompt_tokens; ++i) {
    request.prompt_ids.push_back(static_cast<int32_t>((i * 37 + 11) % m->config.vocab_size));
  }
  serving::generate(*m->transformer, request);  // warm-up: pipelines, caches
  serving::GenerationResult best;
  for (int run = 0; run < 3; ++run) {
    const auto result = serving::generate(*m->transformer, request);
    if (run == 0 || result.decode_tokens_per_s() > best.decode_tokens_per_s()) best = result;
  }
  json doc = {{"backend", m->backend->name()},
              {"prompt_tokens", prompt_tokens},
              {"prefill_tokens_per_s", best.prefill_tokens_per_s()},
              {"decode_steps", best.decode_steps},
              {"decode_tokens_per_s", best.decode_tokens_per_s()}};
  if (auto* vk = dynamic_cast<VulkanBackend*>(m->backend.get())) {
    // Short generations with timestamps on, for the breakdown of the prefill step (one
    // token: only the prompt's step runs) and of a decode step.
    vk->set_timestamps(true);
    request.max_tokens = 1;
    serving::generate(*m->transformer, request);
    doc["last_prefill_step"] = step_breakdown(vk->last_step_timings());
    request.max_tokens = 2;
    serving::generate(*m->transformer, request);
    doc["last_decode_step"] = step_breakdown(vk->last_step_timings());
  }
  return doc;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rounds of a 128-token prefill and 16 decode steps per variant, the variants alternating round
// by round so they see the same load (round -1 warms up); `prepare(variant)` sets one up and
// `forward` runs a pass. Medians per variant label: {"prefill_ms", "decode_step_ms"}.
json time_variants(model::Model& m, const std::vector<std::string>& labels, int rounds,
                   const std::function<void(size_t)>& prepare,
                   const std::function<void(std::span<const int32_t>, model::KvCache&)>& forward) {
  std::vector<int32_t> prompt;
  for (int i = 0; i < 128; ++i) {
    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % m.config.vocab_size));
  }
  std::map<std::string, std::vector<double>> prefill_ms, decode_ms;
  for (int round = -1; round < rounds; ++round) {
    for (size_t v = 0; v < labels.size(); ++v) {
      prepare(v);
      model::KvCache cache = m.transformer->new_cache(m.config.context_length);
      auto start = Clock::now();
      forward(prompt, cache);
      const double prefill = milliseconds_since(start);
      start = Clock::now();
      for (int step = 0; step < 16; ++step) forward({&prompt[step], 1}, cache);
      const double decode = milliseconds_since(start) / 16.0;
      if (round < 0) continue;
      prefill_ms[labels[v]].push_back(prefill);
      decode_ms[labels[v]].push_back(decode);
    }
  }
  json doc = {{"backend", m.backend->name()}, {"prompt_tokens", prompt.size()}, {"rounds", rounds}};
  for (const std::string& label : labels) {
    doc[label] = {{"prefill_ms", median(prefill_ms[label])},
                  {"decode_step_ms", median(decode_ms[label])}};
  }
  return doc;
}

// Attention capture on vs off in the same run: a 128-token prefill and 16 decode steps of the
// model, with no capture, one layer's head, and every layer and head, rounds interleaved so
// the three see the same machine load; the median of each.
json capture_ab(const std::string& path, BackendKind kind, int rounds) {
  auto m = model::load_model(path, kind);
  const std::vector<std::optional<model::AttentionCapture>> captures = {
      std::nullopt, model::AttentionCapture{0, 0}, model::AttentionCapture{}};
  return time_variants(
      *m, {"off", "one_head", "all_layers_and_heads"}, rounds,
      [&](size_t v) { m->transformer->set_attention_capture(captures[v]); },
      [&](std::span<const int32_t> tokens, model::KvCache& cache) {
        m->transformer->forward(tokens, cache);
      });
}

// Per-dispatch spans on vs off in the same run (as the engine asks for them,
// EngineConfig::kernel_spans): a 128-token prefill and 16 decode steps on Vulkan, rounds
// alternating; medians. On also turns the timestamp queries on, which is most of its cost.
json spans_ab(const std::string& path, int rounds) {
  auto m = model::load_model(path, BackendKind::kVulkan);
  bool spans = false;
  size_t spans_per_pass = 0;
  json doc = time_variants(
      *m, {"off", "on"}, rounds, [&](size_t v) { spans = v == 1; },
      [&](std::span<const int32_t> tokens, model::KvCache& cache) {
        if (!spans) {
          m->transformer->forward(tokens, cache);
          return;
        }
        m->backend->set_kernel_spans(true);
        m->transformer->forward(tokens, cache);
        spans_per_pass = m->backend->take_kernel_spans().size();
        m->backend->set_kernel_spans(false);
      });
  doc["spans_per_decode_step"] = spans_per_pass;  // the last pass: a decode step
  return doc;
}

// Is a decode step dispatch bound? The cost of a tiny dispatch inside a step (timestamps
// off), the dispatches of one decode step of the model, the step's wall time (timestamps off),
// and the device time inside its kernels (timestamps on, for one step only: the queries
// themselves cost lavapipe ~100 us each, so they are not on while the wall time is taken).
json dispatch_cost(const std::string& path, int rounds) {
  VulkanBackendOptions untimed;
  untimed.timestamps = false;
  json doc;
  {
    VulkanBackend vk(untimed);
    doc["device"] = vk.device().name;
    doc["tiny_dispatch"] = {dispatch_overhead(vk, "off"), dispatch_overhead(vk, "off", 1024)};
    vk.set_timestamps(true);  // what two queries around each dispatch add
    doc["tiny_dispatch"].push_back(dispatch_overhead(vk, "on"));
  }
  auto m = model::load_model(path, BackendKind::kVulkan);
  auto* vk = dynamic_cast<VulkanBackend*>(m->backend.get());
  vk->set_timestamps(false);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 32; ++i) {
    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % m->config.vocab_size));
  }
  std::vector<double> step_ms;
  for (int round = -1; round < rounds; ++round) {
    model::KvCache cache = m->transformer->new_cache(m->config.context_length);
    m->transformer->forward(prompt, cache);
    for (int step = 0; step < 16; ++step) {
      const auto start = Clock::now();
      m->transformer->forward({&prompt[step], 1}, cache);
      if (round >= 0) step_ms.push_back(milliseconds_since(start));
    }
  }
  std::sort(step_ms.begin(), step_ms.end());
  doc["decode_step_wall_ms_median"] = step_ms[step_ms.size() / 2];
  doc["decode_step_wall_ms_best"] = step_ms.front();
  doc["decode_dispatches"] = vk->last_step_timings().dispatches;
  // Device time inside the kernels of one decode step (best of a few).
  vk->set_timestamps(true);
  double kernels_ms = INFINITY;
  for (int round = 0; round < 5; ++round) {
    model::KvCache cache = m->transformer->new_cache(m->config.context_length);
    m->transformer->forward(prompt, cache);
    m->transformer->forward({&prompt[0], 1}, cache);
    const StepTimings& step = vk->last_step_timings();
    double sum = 0.0;
    for (const KernelTiming& k : step.kernels) sum += k.milliseconds;
    kernels_ms = std::min(kernels_ms, sum);
    doc["decode_step_breakdown"] = step_breakdown(step);
  }
  doc["decode_kernels_device_ms_best"] = kernels_ms;
  return doc;
}

int run(int argc, char** argv) {
  std::string model_path;
  bool quick = false, fresh = false, products_only = false, with_baseline = false,
       attention_only = false, capture_only = false, spans_only = false, dispatch_only = false,
       k_quants = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc)
      model_path = argv[++i];
    else if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--fresh-probe") == 0)
      fresh = true;
    else if (std::strcmp(argv[i], "--products-only") == 0)
      products_only = true;
    else if (std::strcmp(argv[i], "--baseline") == 0)
      with_baseline = true;
    else if (std::strcmp(argv[i], "--attention-only") == 0)
      attention_only = true;
    else if (std::strcmp(argv[i], "--capture-ab") == 0)
      capture_only = true;
    else if (std::strcmp(argv[i], "--spans-ab") == 0)
      spans_only = true;
    else if (std::strcmp(argv[i], "--dispatch-cost") == 0)
      dispatch_only = true;
    else if (std::strcmp(argv[i], "--k-quants") == 0)
      k_quants = true;
    else {
      std::cerr << "usage: servescope-vulkan-bench [--model M.gguf] [--quick] [--fresh-probe]"
                   " [--products-only] [--baseline] [--attention-only] [--capture-ab]"
                   " [--spans-ab] [--dispatch-cost] [--k-quants]\n";
      return 2;
    }
  }
  if ((spans_only || dispatch_only) && model_path.empty()) {
    std::cerr << "servescope-vulkan-bench: --spans-ab and --dispatch-cost need --model M.gguf\n";
    return 2;
  }
  if (spans_only) {
    std::cout << json{{"kernel_spans", spans_ab(model_path, quick ? 3 : 7)}}.dump(2) << "\n";
    return 0;
  }
  if (dispatch_only) {
    std::cout << json{{"dispatch_cost", dispatch_cost(model_path, quick ? 3 : 7)}}.dump(2) << "\n";
    return 0;
  }
  if (capture_only) {
    if (model_path.empty()) {
      std::cerr << "servescope-vulkan-bench: --capture-ab needs --model M.gguf\n";
      return 2;
    }
    const int rounds = quick ? 3 : 7;
    std::cout << json{{"attention_capture",
                       {capture_ab(model_path, BackendKind::kCpu, rounds),
                        capture_ab(model_path, BackendKind::kVulkan, rounds)}}}
                     .dump(2)
              << "\n";
    return 0;
  }
  VulkanBackendOptions timed;
  timed.timestamps = true;  // kernel times from the device (where it has timestamps)
  VulkanBackend vk(timed);
  ProbedRoofs probed;
  if (fresh)
    probed.roofs = vk.measure_roofs();
  else
    probed = probe_roofs(vk);
  json doc = {{"device", vk.device().name},
              {"device_type", vk.device().type},
              {"roofs",
               {{"stream_gb_per_s", probed.roofs.memory_gb_per_s},
                {"compute_gflop_per_s", probed.roofs.compute_gflop_per_s},
                {"from_cache", probed.from_cache}}}};
  std::cerr << doc.dump() << "\n";
  if (!products_only) doc["attention"] = attention_times(vk, quick ? 3 : 10);
  if (attention_only) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  if (!products_only) {
    VulkanBackendOptions untimed;
    untimed.timestamps = false;
    VulkanBackend vk_untimed(untimed);
    doc["dispatch"] = {dispatch_overhead(vk, "on"), dispatch_overhead(vk_untimed, "off")};
    doc["small_ops_untimed"] = small_ops(vk_untimed);
    std::cerr << doc["small_ops_untimed"].dump() << "\n";
    std::cerr << doc["dispatch"].dump() << "\n";
  }

  std::vector<std::pair<int64_t, int64_t>> shapes = {{768, 768}, {4096, 4096}};
  if (!model_path.empty()) {
    auto m = model::load_model(model_path, BackendKind::kCpu);
    const auto& c = m->config;
    std::set<std::pair<int64_t, int64_t>> model_shapes = {{c.dim, c.dim},
                                                          {c.kv_dim(), c.dim},
                                                          {c.ffn_dim, c.dim},
                                                          {c.dim, c.ffn_dim},
                                                          {c.vocab_size, c.dim}};
    shapes.insert(shapes.begin(), model_shapes.begin(), model_shapes.end());
  }
  if (quick)
    shapes.erase(std::remove(shapes.begin(), shapes.end(), std::pair<int64_t, int64_t>{4096, 4096}),
                 shapes.end());
  std::unique_ptr<VulkanBackend> baseline;
  if (with_baseline && vk.device().type == "cpu") {
    VulkanBackendOptions previous = timed;
    previous.subgroup_matmul = false;
    baseline = std::make_unique<VulkanBackend>(previous);
    doc["baseline"] = "matmul_vec for matvec and matmat (subgroup_matmul = false)";
  }
  const std::vector<GgmlType> types =
      k_quants ? std::vector{GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K,
                             GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}
               : std::vector{GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};
  doc["products"] = products(vk, baseline.get(), probed.roofs, shapes, types, quick);
  if (!model_path.empty() && !products_only) {
    doc["end_to_end"] = {end_to_end(model_path, BackendKind::kVulkan, 128, 64),
                         end_to_end(model_path, BackendKind::kCpu, 128, 64)};
  }
  std::cout << doc.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace servescope::compute::vulkan

int main(int argc, char** argv) {
  try {
    return servescope::compute::vulkan::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "servescope-vulkan-bench: " << e.what() << "\n";
    return 1;
  }
}
