#include "engine/compute/vulkan/vulkan_backend.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "engine/compute/vulkan/vulkan_functions.h"
#include "engine/compute/vulkan/weight_layout.h"
#include "engine/core/error.h"

namespace servescope::compute::vulkan {
namespace {

// --- storage ------------------------------------------------------------------------------

struct TensorStorage final : Buffer {
  explicit TensorStorage(std::shared_ptr<DeviceMemory> memory, Allocation a)
      : storage(std::move(memory), a) {}
  OwnedAllocation storage;
};

// A weight matrix as chunks of whole rows, each small enough for one shader binding.
struct WeightChunk {
  int64_t first_row = 0;
  int64_t rows = 0;
  std::unique_ptr<OwnedAllocation> storage;
};

struct WeightStorage final : Buffer {
  std::vector<WeightChunk> chunks;
};

// One side (keys or values) of a KV store: parts of `part_slots` whole rows (the last part may
// hold fewer), each within one shader binding. A store that fits one binding has one part and
// runs the kernels it always ran; more parts run the _split kernels
// (shaders/include/kv_parts.glsl).
struct KvSideStorage final : Buffer {
  int64_t part_slots = 0;
  std::vector<std::unique_ptr<OwnedAllocation>> parts;
};

constexpr uint32_t kKvMaxParts = 4;  // bindings per side in the _split kernels (kv_parts.glsl)

const KvSideStorage& kv_side(const std::shared_ptr<Buffer>& buffer) {
  assert(buffer);
  return static_cast<const KvSideStorage&>(*buffer);
}

// A store's bindings as its kernels declare them: part 0 of keys and of values where an unsplit
// store is bound, and for a split store `extra`, parts 1..3 of keys then of values (part 0
// again for parts it does not have), bound after the kernel's other buffers.
struct KvBindings {
  BufferRange keys;
  BufferRange values;
  std::vector<BufferRange> extra;  // empty for a store of one part
  uint32_t part_slots = 0;
};

KvBindings kv_bindings(const KvStore& store) {
  const KvSideStorage& keys = kv_side(store.keys);
  const KvSideStorage& values = kv_side(store.values);
  KvBindings result{range_of(keys.parts.front()->get()),
                    range_of(values.parts.front()->get()),
                    {},
                    static_cast<uint32_t>(keys.part_slots)};
  if (keys.parts.size() == 1) return result;
  for (const KvSideStorage* side : {&keys, &values}) {
    for (size_t part = 1; part < static_cast<size_t>(kKvMaxParts); ++part) {
      result.extra.push_back(range_of(side->parts[part < side->parts.size() ? part : 0]->get()));
    }
  }
  return result;
}

const Allocation& allocation_of(const std::shared_ptr<Buffer>& buffer) {
  assert(buffer);
  return static_cast<const TensorStorage&>(*buffer).storage.get();
}

const Allocation& allocation_of(const Tensor& t) { return allocation_of(t.buffer); }

BufferRange bind(const Tensor& t) { return range_of(allocation_of(t)); }

const WeightStorage& weights_of(const WeightMatrix& w) {
  return static_cast<const WeightStorage&>(*w.buffer);
}

uint32_t u32(int64_t value) {
  if (value < 0 || value > int64_t{0xffffffff}) {
    throw BackendError("Vulkan: a size of " + std::to_string(value) +
                       " does not fit a shader's 32-bit index");
  }
  return static_cast<uint32_t>(value);
}

uint32_t groups_for(int64_t items, int64_t per_group) {
  return u32((items + per_group - 1) / per_group);
}

// Workgroups for a 1-D range of groups, spread over x and y when there are more than the
// 65535 per axis every device supports (the shader linearises with linear_workgroup()).
WorkgroupCount linear_groups(uint32_t groups) {
  constexpr uint32_t kPerAxis = 65535;
  if (groups <= kPerAxis) return {groups, 1, 1};
  return {kPerAxis, (groups + kPerAxis - 1) / kPerAxis, 1};
}

// CPU devices: at most this many workgroups over the rows of silu_mul / gelu_mul, each walking
// every 8th row (a lavapipe workgroup costs more than its 64 elements; 128-token prefill of the
// bundled model: 2.8-3.1 -> 1.8-2.0 ms).
constexpr uint32_t kCpuRowGroups = 8;
// CPU devices: at most this many workgroups (of one subgroup) over the norms of rms_norm_lanes.
constexpr uint32_t kCpuNormGroups = 8;

// Element-wise kernels: 64 columns per group along x, one row per group along y.
WorkgroupCount elementwise_groups(int64_t rows, int64_t cols) {
  if (rows > 65535) throw BackendError("Vulkan: more than 65535 rows in one operation");
  return {groups_for(cols, 64), u32(rows), 1};
}

std::string type_suffix(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::F32:
      return "f32";
    case gguf::GgmlType::F16:
      return "f16";
    case gguf::GgmlType::Q8_0:
      return "q8_0";
    case gguf::GgmlType::Q4_0:
      return "q4_0";
    case gguf::GgmlType::BF16:
      return "bf16";
    case gguf::GgmlType::Q4_1:
      return "q4_1";
    case gguf::GgmlType::Q5_0:
      return "q5_0";
    case gguf::GgmlType::Q5_1:
      return "q5_1";
    case gguf::GgmlType::Q2_K:
      return "q2_k";
    case gguf::GgmlType::Q3_K:
      return "q3_k";
    case gguf::GgmlType::Q4_K:
      return "q4_k";
    case gguf::GgmlType::Q5_K:
      return "q5_k";
    case gguf::GgmlType::Q6_K:
      return "q6_k";
    default:
      throw BackendError("Vulkan: weights of type " + std::string(gguf::type_name(type)) +
                         " are not supported; supported: " + gguf::supported_types_list());
  }
}

// --- push constants (mirrors of the shaders' push_constant blocks) -------------------------

struct EmbedPush {
  uint32_t n_ids, cols, out_offset, out_stride, chunk_first_row, chunk_rows;
};
struct RmsNormPush {
  uint32_t rows, cols, x_offset, x_stride, w_offset, out_offset, out_stride;
  float eps;
  uint32_t y_offset, y_stride;  // add_rms_norm only
  uint32_t groups;              // norms per row (rms_norm_heads)
};
struct LayerNormPush {
  uint32_t rows, cols, x_offset, x_stride, w_offset, b_offset, out_offset, out_stride;
  float eps;
  uint32_t y_offset, y_stride;  // add_layer_norm only
};

// True when no element is in both views: different buffers, or disjoint column ranges of the
// same rows (the queries and keys of one fused projection).
bool disjoint_views(const Tensor& a, const Tensor& b) {
  if (a.buffer != b.buffer) return true;
  if (a.rows != b.rows || a.row_stride != b.row_stride) return false;
  const int64_t first = std::min(a.offset, b.offset);
  const int64_t end = std::max(a.offset + a.cols, b.offset + b.cols);
  const bool apart = a.offset + a.cols <= b.offset || b.offset + b.cols <= a.offset;
  return apart && end - first <= a.row_stride;  // both within one row's span
}

struct MatmulPush {
  uint32_t n, rows, cols, x_offset, x_stride, out_offset, out_stride, bias_offset, has_bias;
};
struct RopePush {
  uint32_t rows, pairs_per_head, pairs_per_row0, x0_offset, x0_stride, pairs_per_row1, x1_offset,
      x1_stride, neox, pair_step;
};
struct GatherPush {
  uint32_t rows, cols, src_offset, src_stride, dst_offset, dst_stride;
};
struct TwoViewPush {  // add (x, y)
  uint32_t rows, cols, a_offset, a_stride, b_offset, b_stride;
};
struct SiluMulPush {
  uint32_t rows, cols, gate_offset, gate_stride, up_offset, up_stride, out_offset, out_stride;
};
struct GeluPush {
  uint32_t rows, cols, x_offset, x_stride;
};
struct ScalePush {  // scale, soft_cap
  uint32_t rows, cols, x_offset, x_stride;
  float value;
};
struct StoreKvPush {
  uint32_t rows, kv_dim, keys_offset, keys_stride, values_offset, values_stride;
};
struct AttentionPush {  // shaders/include/attention_push.glsl
  uint32_t head_dim, group, kv_dim, q_offset, q_stride, out_offset, out_stride;
  float scale;
  uint32_t n_heads, n_queries, positions_at, context_offsets_at, slot_map_at, weights_offset,
      weights_stride;
  float softcap;
  uint32_t window;
};
struct ProbeFlopsPush {
  uint32_t iterations;
  float seed;
};

// Each shader's push_constant block is a run of 32-bit scalars, member i at byte 4 x i. Each
// mirror is checked against it: its word count, and the offset of its last member and of any
// float among the uints (a member added, dropped or moved on one side only fails here).
template <typename Push>
constexpr bool is_words(size_t count) {
  return std::is_standard_layout_v<Push> && std::is_trivially_copyable_v<Push> &&
         sizeof(Push) == 4 * count;
}
static_assert(is_words<EmbedPush>(6) && offsetof(EmbedPush, chunk_rows) == 5 * 4, "embed.comp");
static_assert(is_words<RmsNormPush>(11) && offsetof(RmsNormPush, eps) == 7 * 4 &&
                  offsetof(RmsNormPush, groups) == 10 * 4,
              "rms_norm.comp");
static_assert(is_words<LayerNormPush>(11) && offsetof(LayerNormPush, eps) == 8 * 4 &&
                  offsetof(LayerNormPush, y_stride) == 10 * 4,
              "layer_norm.comp");
static_assert(is_words<MatmulPush>(9) && offsetof(MatmulPush, has_bias) == 8 * 4,
              "include/matmul_push.glsl");
static_assert(is_words<RopePush>(10) && offsetof(RopePush, pair_step) == 9 * 4, "rope.comp");
static_assert(is_words<GatherPush>(6) && offsetof(GatherPush, dst_stride) == 5 * 4,
              "gather_rows.comp");
static_assert(is_words<TwoViewPush>(6) && offsetof(TwoViewPush, b_stride) == 5 * 4, "add.comp");
static_assert(is_words<SiluMulPush>(8) && offsetof(SiluMulPush, out_stride) == 7 * 4,
              "silu_mul.comp");
static_assert(is_words<GeluPush>(4) && offsetof(GeluPush, x_stride) == 3 * 4, "gelu.comp");
static_assert(is_words<ScalePush>(5) && offsetof(ScalePush, value) == 4 * 4, "scale.comp");
static_assert(is_words<StoreKvPush>(6) && offsetof(StoreKvPush, values_stride) == 5 * 4,
              "store_kv.comp");
static_assert(is_words<ProbeFlopsPush>(2) && offsetof(ProbeFlopsPush, seed) == 1 * 4,
              "probe_flops.comp");
static_assert(is_words<AttentionPush>(17) && offsetof(AttentionPush, scale) == 7 * 4 &&
                  offsetof(AttentionPush, softcap) == 15 * 4 &&
                  offsetof(AttentionPush, window) == 16 * 4,
              "include/attention_push.glsl");

// Push constants of one weight chunk's product: the chunk's rows are output columns
// [first_row, first_row + rows).
MatmulPush matmul_push(const Tensor& x, const WeightMatrix& w, const WeightChunk& chunk,
                       const Tensor* bias, const Tensor& out) {
  return {u32(x.rows),
          u32(chunk.rows),
          u32(w.cols),
          u32(x.offset),
          u32(x.row_stride),
          u32(out.offset + chunk.first_row),
          u32(out.row_stride),
          bias != nullptr ? u32(bias->offset + chunk.first_row) : 0u,
          bias != nullptr ? 1u : 0u};
}

bool vec4_view(const Tensor& t) { return t.offset % 4 == 0 && t.row_stride % 4 == 0; }

// matmul_lanes shares each 32-column slice of x among 8 lanes of a subgroup with shuffles.
bool subgroups_fit_lanes_kernel(VkPhysicalDevice device) {
  VkPhysicalDeviceSubgroupProperties subgroups{};
  subgroups.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties.pNext = &subgroups;
  vkGetPhysicalDeviceProperties2(device, &properties);
  return subgroups.subgroupSize >= 8 && (subgroups.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
         (subgroups.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
}

// matmul_lanes' register tile for prefill. Tuned on lavapipe (BENCHMARKS.md): F32 and F16
// load the most bytes per weight, so each weight they load serves 32 tokens, 4 rows per
// invocation, in groups of up to 64 invocations; quantised weights are cheap to load, so there
// the loads of x dominate and 8 rows share each (x 16 tokens: as many accumulators; 128-token
// prefill of the bundled model 1.1x faster than 4 rows), in groups of up to 32. The group is the
// multiple of 8 invocations (the lanes that share x) up to that size that pads the rows least,
// largest first: lavapipe runs each group on one thread, and a padded group costs as much as a
// full one (F32, 1344 rows: 6 groups of 56 instead of 6 of 64, the last of which did a quarter
// of its work).
LanesTile prefill_tile(gguf::GgmlType type, int64_t weight_rows) {
  const bool quantised = gguf::block_elements(type) > 1;
  const uint32_t max_group = quantised ? 32u : 64u;
  const uint32_t rows = quantised ? 8u : 4u;
  const int64_t invocations = (weight_rows + rows - 1) / rows;
  uint32_t best = max_group;
  int64_t best_padding = -1;
  for (uint32_t group = max_group; group >= 8u; group -= 8u) {
    const int64_t padding = (invocations + group - 1) / group * group - invocations;
    if (best_padding < 0 || padding < best_padding) {
      best = group;
      best_padding = padding;
    }
  }
  return {rows, quantised ? 16u : 32u, best};
}

// matmul_lanes for decode (1-8 tokens, rounded up to a power of two): every weight is read
// once, so the kernel is bandwidth bound and x, shared by the lanes, must not cost a load per
// lane. Groups of 16 invocations, so that even a 128-row matrix spreads over 2 workgroups
// (lavapipe runs one workgroup per thread).
LanesTile decode_tile(int64_t tokens) {
  uint32_t tokens_per_tile = 1;
  while (tokens_per_tile < 8 && tokens_per_tile < tokens) tokens_per_tile *= 2;
  return {4u, tokens_per_tile, 16u};
}

constexpr int64_t kMaxAttentionHeadDim = 256;  // attention.comp: 64 threads x 4 dimensions
constexpr int64_t kStoreKvBlock = 32;          // store_kv.comp: elements per invocation

// attention_rows' workgroup size for `pairs` (query row, head) pairs: 8, or as many as leave
// at least two workgroups (lavapipe runs each on one thread, so one group would leave the
// other cores idle; decode of one sequence has only n_heads pairs).
uint32_t attention_rows_group_size(int64_t pairs) {
  uint32_t size = 8;
  while (size > 1 && pairs < 2 * int64_t{size}) size /= 2;
  return size;
}

// Below this many (row, head) pairs (decode of a few sequences), attention_rows gives each pair
// the 8 lanes of a subgroup, each walking an eighth of the keys: one lane per pair would walk a
// long context alone while 7 of its SIMD lanes idle.
constexpr int64_t kAttentionSplitBelowPairs = 64;
constexpr uint32_t kAttentionSplit = 8;

// How attention_rows spreads (row, head) pairs over invocations (its specialization constants).
struct AttentionRowsMode {
  uint32_t group_size = 8;  // invocations per workgroup
  uint32_t split = 1;       // lanes per pair, each walking a share of the keys
  uint32_t share_keys = 1;  // rows of one head whose lanes share each key's loads
};

// With subgroups that shuffle (`lanes`): few pairs split their keys over 8 lanes (decode);
// many share each key among 8 rows (prefill: 8x fewer key and value loads). Without: one
// invocation per pair.
AttentionRowsMode attention_rows_mode(int64_t pairs, bool lanes) {
  if (!lanes) return {attention_rows_group_size(pairs), 1, 1};
  if (pairs < kAttentionSplitBelowPairs) return {kAttentionSplit, kAttentionSplit, 1};
  return {kAttentionSplit, 1, kAttentionSplit};
}

// attention_rows' constants by id: 2 is a split store's slots per part (0 for an unsplit store,
// whose kernel has no constant 2: one pipeline whatever the store's size, the one the warm-up
// prepared); 4 is head_dim / 4 when the kernel shares keys, so that its loops over a head
// unroll (0: head_dim from the push constants, for the kernels prepared before a model's
// head_dim is known; a prefill compiles its own in the first, cold, step).
std::array<uint32_t, 5> attention_rows_constants(const AttentionRowsMode& mode,
                                                 uint32_t part_slots, int64_t head_dim) {
  return {mode.group_size, mode.split, part_slots, mode.share_keys,
          mode.share_keys > 1 ? u32(head_dim / 4) : 0u};
}

std::span<const uint8_t> as_bytes(std::span<const int32_t> ints) {
  return {reinterpret_cast<const uint8_t*>(ints.data()), ints.size_bytes()};
}

// Test hook: SERVESCOPE_VULKAN_MAX_BINDING_BYTES=N acts as VulkanBackendOptions::max_binding_bytes
// = N where the options leave it 0, so that whole-model runs (the CLI included) split weights
// and KV stores as on a device whose bindings hold N bytes. 0 when unset or not a number.
uint64_t max_binding_bytes_from_environment() {
  const char* text = std::getenv("SERVESCOPE_VULKAN_MAX_BINDING_BYTES");
  if (text == nullptr) return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  return end != text && *end == '\0' ? value : 0;
}

void check_slot(int64_t slot, const KvStore& store) {
  if (slot < 0 || slot >= store.slots) {
    throw InputError("KV slot " + std::to_string(slot) + " is outside the store (0.." +
                     std::to_string(store.slots - 1) + ")");
  }
}

// InputError unless every query row of `batch` sees existing slots of the store: the shaders
// index the slot map and the store with these numbers unchecked.
void check_attention_batch(const AttentionBatch& batch, int64_t rows, const KvStore& store) {
  if (static_cast<int64_t>(batch.positions.size()) != rows ||
      static_cast<int64_t>(batch.context_offsets.size()) != rows) {
    throw InputError("an attention batch needs one position and one context offset per query row");
  }
  for (size_t i = 0; i < batch.positions.size(); ++i) {
    const int64_t first = batch.context_offsets[i];
    const int64_t end = first + int64_t{batch.positions[i]} + 1;
    if (batch.positions[i] < 0 || first < 0 || end > static_cast<int64_t>(batch.slot_map.size())) {
      throw InputError("query row " + std::to_string(i) +
                       " of an attention batch reaches past its slot map");
    }
  }
  for (const int32_t slot : batch.slot_map) check_slot(slot, store);
}

}  // namespace

VulkanBackend::VulkanBackend(const VulkanBackendOptions& options)
    : context_(std::make_shared<VulkanContext>(options.context)) {
  device_memory_ =
      std::make_shared<DeviceMemory>(context_, MemoryKind::kDevice, options.map_device_memory,
                                     kDefaultBlockBytes, options.device_memory_budget);
  host_memory_ = std::make_shared<DeviceMemory>(context_, MemoryKind::kHost);
  pipelines_ = std::make_unique<Pipelines>(context_);
  const bool cpu_device = context_->description().type == "cpu";
  timestamps_by_default_ = options.timestamps.value_or(!cpu_device);
  recorder_ = std::make_unique<CommandRecorder>(context_, host_memory_, timestamps_by_default_);
  workgroup_tiles_ = options.kernel_style == KernelStyle::kWorkgroupTiles ||
                     (options.kernel_style == KernelStyle::kAuto && !cpu_device);
  lanes_kernel_ = !workgroup_tiles_ && options.subgroup_matmul &&
                  subgroups_fit_lanes_kernel(context_->physical_device());
  const uint64_t device_limit = context_->properties().limits.maxStorageBufferRange;
  const uint64_t asked = options.max_binding_bytes != 0 ? options.max_binding_bytes
                                                        : max_binding_bytes_from_environment();
  max_binding_bytes_ = asked == 0 ? device_limit : std::min<uint64_t>(asked, device_limit);
}

VulkanBackend::~VulkanBackend() {
  try {
    finish();
  } catch (const Error&) {
    // The device is gone; destruction goes on regardless.
  }
}

void VulkanBackend::finish() { recorder_->submit_and_wait(); }

void VulkanBackend::dispatch(const std::string& shader, std::initializer_list<BufferRange> bindings,
                             const void* push, uint32_t push_bytes, WorkgroupCount groups,
                             KernelClass kind, std::initializer_list<uint32_t> constants) {
  dispatch(shader, std::span(bindings.begin(), bindings.size()), push, push_bytes, groups, kind,
           std::span(constants.begin(), constants.size()));
}

void VulkanBackend::dispatch(const std::string& shader, std::span<const BufferRange> bindings,
                             const void* push, uint32_t push_bytes, WorkgroupCount groups,
                             KernelClass kind, std::span<const uint32_t> constants) {
  const Pipeline& pipeline =
      pipelines_->get(shader, static_cast<uint32_t>(bindings.size()), constants);
  recorder_->dispatch(pipeline, bindings, push, push_bytes, groups, kind);
}

// --- memory -------------------------------------------------------------------------------

Tensor VulkanBackend::create_tensor(int64_t rows, int64_t cols, BufferPurpose purpose) {
  const auto bytes = static_cast<VkDeviceSize>(rows * cols) * sizeof(float);
  Allocation allocation;
  try {
    allocation = device_memory_->allocate(bytes, purpose);
  } catch (const BackendError&) {
    // Out of memory in the middle of a step: the step fails, so none of it may run later
    // (as the start of the next step) on tensors its caller has given up.
    recorder_->discard();
    throw;
  }
  auto storage = std::make_shared<TensorStorage>(device_memory_, allocation);
  // Activations are always written before they are read; caches and weights start at zero.
  if (purpose != BufferPurpose::kActivations) {
    recorder_->fill_zero(range_of(storage->storage.get()));
  }
  return Tensor{storage, 0, rows, cols, cols};
}

void VulkanBackend::copy_into(const Allocation& dst, std::span<const uint8_t> bytes) {
  if (dst.mapped != nullptr) {
    finish();  // recorded work may still use this memory
    std::memcpy(dst.mapped, bytes.data(), bytes.size());
    return;
  }
  const BufferRange staging = recorder_->upload(bytes);
  const VkBufferCopy region{0, 0, bytes.size()};
  recorder_->copy(staging, range_of(dst), std::span(&region, 1));
  finish();  // weights can be large: give the staging memory back now
}

WeightMatrix VulkanBackend::upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                                          std::span<const uint8_t> data) {
  type_suffix(type);  // rejects unsupported types
  const uint64_t file_row_bytes = gguf::row_bytes(type, cols);
  const uint64_t row_bytes = device_row_bytes(type, cols);
  assert(data.size() == file_row_bytes * static_cast<uint64_t>(rows));
  // Leave room for rounding the chunk up to whole 16-byte units.
  const uint64_t rows_per_chunk = (max_binding_bytes_ - 16) / row_bytes;
  if (rows_per_chunk == 0) {
    throw BackendError("Vulkan: one row of a weight matrix (" + std::to_string(row_bytes) +
                       " bytes) is larger than the device's largest storage binding");
  }
  prepare_pipelines(type, rows);
  auto storage = std::make_shared<WeightStorage>();
  for (int64_t first = 0; first < rows; first += static_cast<int64_t>(rows_per_chunk)) {
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(rows_per_chunk), rows - first);
    const std::vector<uint8_t> device_bytes =
        to_device_layout(type, count, cols,
                         data.subspan(file_row_bytes * static_cast<uint64_t>(first),
                                      file_row_bytes * static_cast<uint64_t>(count)));
    auto chunk = std::make_unique<OwnedAllocation>(
        device_memory_, device_memory_->allocate(device_bytes.size(), BufferPurpose::kWeights));
    copy_into(chunk->get(), device_bytes);
    storage->chunks.push_back({first, count, std::move(chunk)});
  }
  return WeightMatrix{storage, type, rows, cols};
}

void VulkanBackend::prepare_pipelines(gguf::GgmlType weight_type, int64_t weight_rows) {
  const std::string suffix = type_suffix(weight_type);
  std::vector<const Pipeline*> prepared;
  prepared.push_back(&pipelines_->get("embed_" + suffix, 3));
  // Decode (1 token, 4 rows per invocation); prefill passes of 8 tokens (4 or 8 rows).
  for (const auto& constants : {std::array<uint32_t, 2>{1, 4}, std::array<uint32_t, 2>{8, 4},
                                std::array<uint32_t, 2>{8, 8}}) {
    prepared.push_back(&pipelines_->get("matmul_vec_" + suffix, 4, constants));
  }
  if (workgroup_tiles_) prepared.push_back(&pipelines_->get("matmul_tiled_" + suffix, 4));
  if (lanes_kernel_) {
    // Every tile matmul() may pick: a 5-token prompt or a batch of 3 decodes would otherwise
    // compile its tile (seconds on lavapipe) inside the first step that needs it.
    for (const LanesTile& tile : {prefill_tile(weight_type, weight_rows), decode_tile(1),
                                  decode_tile(2), decode_tile(4), decode_tile(8)}) {
      prepared.push_back(&pipelines_->get("matmul_lanes_" + suffix, 4,
                                          std::array{tile.rows, tile.tokens, tile.group_size}));
    }
  }
  if (!common_pipelines_ready_) {
    common_pipelines_ready_ = true;
    // name, bindings: as dispatched below.
    const std::string lanes = lanes_kernel_ ? "_lanes" : "";
    const std::pair<std::string, uint32_t> common[] = {
        {"rms_norm" + lanes, 3}, {"add_rms_norm" + lanes, 4}, {"layer_norm", 4},
        {"add_layer_norm", 5},   {"rope", 3},                 {"gather_rows", 3},
        {"add", 2},              {"silu_mul", 3},             {"gelu", 1},
        {"gelu_mul", 3},         {"scale", 1},                {"soft_cap", 1},
        {"silu_mul_vec4", 3},    {"gelu_mul_vec4", 3}};
    if (lanes_kernel_) {
      prepared.push_back(&pipelines_->get("rms_norm_lanes_vec4", 3));
      prepared.push_back(&pipelines_->get("add_rms_norm_lanes_vec4", 4));
    }
    for (const auto& [name, bindings] : common)
      prepared.push_back(&pipelines_->get(name, bindings));
  }
  run_on_no_work(prepared);
}

void VulkanBackend::prepare_kv_pipelines(gguf::GgmlType kv_type, uint32_t part_slots) {
  const std::pair<gguf::GgmlType, uint32_t> key{kv_type, part_slots};
  if (std::find(kv_pipelines_ready_.begin(), kv_pipelines_ready_.end(), key) !=
      kv_pipelines_ready_.end()) {
    return;
  }
  kv_pipelines_ready_.push_back(key);
  // As store_kv and attention dispatch them: a split store's kernels have 6 more bindings and
  // its slots per part as their last specialization constant.
  const bool split = part_slots > 0;
  const std::string suffix = (split ? "split_" : "") + type_suffix(kv_type);
  const uint32_t extra = split ? 2 * (kKvMaxParts - 1) : 0;
  const auto with_parts = [&](std::vector<uint32_t> constants) {
    if (split) constants.push_back(part_slots);
    return constants;
  };
  std::vector<const Pipeline*> prepared = {
      &pipelines_->get("store_kv_" + suffix, 5 + extra, with_parts({}))};
  if (workgroup_tiles_) {
    prepared.push_back(&pipelines_->get("attention_" + suffix, 5 + extra, with_parts({})));
  } else {
    std::vector<AttentionRowsMode> modes;
    for (const uint32_t group_size : {1u, 2u, 4u, 8u}) modes.push_back({group_size, 1, 1});
    if (lanes_kernel_) modes.push_back(attention_rows_mode(1, true));
    for (const AttentionRowsMode& mode : modes) {
      prepared.push_back(&pipelines_->get("attention_rows_" + suffix, 5 + extra,
                                          attention_rows_constants(mode, part_slots, 0)));
    }
  }
  run_on_no_work(prepared);
}

void VulkanBackend::run_on_no_work(std::span<const Pipeline* const> prepared) {
  // Some drivers (lavapipe) compile a shader only when it first runs: run each once on no
  // work. With these push constants (rows or counts 0, a divisor 1) every kernel returns at
  // once, and the zeroed scratch makes attention.comp's one key an empty dot product.
  const Tensor scratch = create_tensor(1, 64, BufferPurpose::kScratch);
  const BufferRange any = bind(scratch);
  std::array<BufferRange, 12> bindings;  // the most a kernel has: attention of a split store
  bindings.fill(any);
  std::array<uint32_t, kPushConstantBytes / 4> push{};
  push[1] = 1;
  for (const Pipeline* pipeline : prepared) {
    recorder_->dispatch(*pipeline, std::span(bindings.data(), pipeline->binding_count), push.data(),
                        sizeof push, {1, 1, 1}, KernelClass::kOther);
  }
  finish();
}

Tensor VulkanBackend::upload_vector(std::span<const float> values) {
  Tensor t = create_tensor(1, static_cast<int64_t>(values.size()), BufferPurpose::kWeights);
  write(t, values);
  return t;
}

void VulkanBackend::write(Tensor& dst, std::span<const float> values) {
  assert(static_cast<int64_t>(values.size()) == dst.size());
  const Allocation& a = allocation_of(dst);
  const size_t row_bytes = static_cast<size_t>(dst.cols) * sizeof(float);
  if (a.mapped != nullptr && !recorder_->has_pending_work()) {
    for (int64_t r = 0; r < dst.rows; ++r) {
      std::memcpy(a.mapped + (dst.offset + r * dst.row_stride) * sizeof(float),
                  values.data() + r * dst.cols, row_bytes);
    }
    return;
  }
  // In the command stream, so it lands after the work recorded before it.
  const BufferRange staging = recorder_->upload(
      {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)});
  std::vector<VkBufferCopy> regions;
  for (int64_t r = 0; r < dst.rows; ++r) {
    regions.push_back({r * row_bytes,
                       static_cast<VkDeviceSize>((dst.offset + r * dst.row_stride) * 4),
                       row_bytes});
  }
  recorder_->copy(staging, range_of(a), regions);
}

std::vector<float> VulkanBackend::read(const Tensor& src) {
  std::vector<float> out(static_cast<size_t>(src.size()));
  const VkDeviceSize row_bytes = static_cast<VkDeviceSize>(src.cols) * sizeof(float);
  std::vector<VkBufferCopy> regions;
  for (int64_t r = 0; r < src.rows; ++r) {
    regions.push_back({static_cast<VkDeviceSize>((src.offset + r * src.row_stride) * 4),
                       r * row_bytes, row_bytes});
  }
  read_regions(allocation_of(src),
               {reinterpret_cast<uint8_t*>(out.data()), out.size() * sizeof(float)}, regions);
  return out;
}

std::vector<uint8_t> VulkanBackend::read_kv_bytes(const KvStore& store, bool values) {
  const uint64_t row_bytes = gguf::row_bytes(store.type, store.kv_dim);
  std::vector<uint8_t> out(row_bytes * static_cast<uint64_t>(store.slots));
  const KvSideStorage& side = kv_side(values ? store.values : store.keys);
  const uint64_t part_bytes = row_bytes * static_cast<uint64_t>(side.part_slots);
  for (size_t part = 0; part < side.parts.size(); ++part) {
    const std::span<uint8_t> dst = std::span(out).subspan(
        part * part_bytes, std::min<uint64_t>(part_bytes, out.size() - part * part_bytes));
    const VkBufferCopy region{0, 0, dst.size()};
    read_regions(side.parts[part]->get(), dst, std::span(&region, 1));
  }
  return out;
}

void VulkanBackend::read_regions(const Allocation& src, std::span<uint8_t> dst,
                                 std::span<const VkBufferCopy> regions) {
  if (src.mapped != nullptr) {
    finish();
    for (const VkBufferCopy& region : regions) {
      std::memcpy(dst.data() + region.dstOffset, src.mapped + region.srcOffset, region.size);
    }
    return;
  }
  const Allocation staging = host_memory_->allocate(dst.size(), BufferPurpose::kScratch);
  try {
    recorder_->copy(range_of(src), range_of(staging), regions);
    finish();
  } catch (...) {
    host_memory_->release(staging);
    throw;
  }
  std::memcpy(dst.data(), staging.mapped, dst.size());
  host_memory_->release(staging);
}

// --- operations -----------------------------------------------------------------------------

void VulkanBackend::embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) {
  assert(out.rows == static_cast<int64_t>(ids.size()) && out.cols == table.cols);
  for (const int32_t id : ids) {
    if (id < 0 || id >= table.rows) {
      throw InputError("token id " + std::to_string(id) + " is outside the table of " +
                       std::to_string(table.rows) + " rows");
    }
  }
  const BufferRange id_buffer = recorder_->upload(
      {reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * sizeof(int32_t)});
  const std::string shader = "embed_" + type_suffix(table.type);
  for (const WeightChunk& chunk : weights_of(table).chunks) {
    const bool used = std::any_of(ids.begin(), ids.end(), [&](int32_t id) {
      return id >= chunk.first_row && id < chunk.first_row + chunk.rows;
    });
    if (!used) continue;
    const EmbedPush push{u32(static_cast<int64_t>(ids.size())),
                         u32(table.cols),
                         u32(out.offset),
                         u32(out.row_stride),
                         u32(chunk.first_row),
                         u32(chunk.rows)};
    dispatch(shader, {range_of(chunk.storage->get()), id_buffer, bind(out)}, &push, sizeof push,
             elementwise_groups(out.rows, out.cols), KernelClass::kOther);
  }
}

void VulkanBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  record_rms_norm(x, nullptr, weight, eps, out);
}

void VulkanBackend::add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                                 Tensor& out) {
  record_rms_norm(x, &y, weight, eps, out);
}

void VulkanBackend::record_rms_norm(const Tensor& x, const Tensor* y, const Tensor& weight,
                                    float eps, Tensor& out, int64_t groups) {
  assert(x.rows == out.rows && x.cols == out.cols && weight.cols * groups == x.cols);
  assert(y == nullptr || (y->rows == x.rows && y->cols == x.cols));
  const uint32_t norms = u32(x.rows * groups);
  const RmsNormPush push{norms,
                         u32(weight.cols),
                         u32(x.offset),
                         u32(x.row_stride),
                         u32(weight.offset),
                         u32(out.offset),
                         u32(out.row_stride),
                         eps,
                         y != nullptr ? u32(y->offset) : 0u,
                         y != nullptr ? u32(y->row_stride) : 0u,
                         u32(groups)};
  // CPU devices: one subgroup per norm (needs the subgroups matmul_lanes needs).
  // There each group walks every kCpuNormGroups-th norm (a lavapipe workgroup costs more than
  // one norm of a few hundred columns).
  // 16-byte accesses where every offset and stride allow them.
  const bool vec4 = lanes_kernel_ && weight.cols % 4 == 0 && x.offset % 4 == 0 &&
                    x.row_stride % 4 == 0 && weight.offset % 4 == 0 && out.offset % 4 == 0 &&
                    out.row_stride % 4 == 0 &&
                    (y == nullptr || (y->offset % 4 == 0 && y->row_stride % 4 == 0));
  const std::string lanes = lanes_kernel_ ? (vec4 ? "_lanes_vec4" : "_lanes") : "";
  const WorkgroupCount workgroups =
      linear_groups(lanes_kernel_ ? std::min(norms, kCpuNormGroups) : norms);
  if (y != nullptr) {
    dispatch("add_rms_norm" + lanes, {bind(x), bind(weight), bind(out), bind(*y)}, &push,
             sizeof push, workgroups, KernelClass::kNorm);
  } else {
    dispatch("rms_norm" + lanes, {bind(x), bind(weight), bind(out)}, &push, sizeof push, workgroups,
             KernelClass::kNorm);
  }
}

void VulkanBackend::rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) {
  assert(weight.cols == head_dim && x.cols % head_dim == 0);
  record_rms_norm(x, nullptr, weight, eps, x, x.cols / head_dim);
}

void VulkanBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                               Tensor& out) {
  record_layer_norm(x, nullptr, weight, bias, eps, out);
}

void VulkanBackend::add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight,
                                   const Tensor& bias, float eps, Tensor& out) {
  record_layer_norm(x, &y, weight, bias, eps, out);
}

void VulkanBackend::record_layer_norm(const Tensor& x, const Tensor* y, const Tensor& weight,
                                      const Tensor& bias, float eps, Tensor& out) {
  assert(x.rows == out.rows && x.cols == out.cols && weight.cols == x.cols && bias.cols == x.cols);
  assert(y == nullptr || (y->rows == x.rows && y->cols == x.cols));
  const LayerNormPush push{u32(x.rows),
                           u32(x.cols),
                           u32(x.offset),
                           u32(x.row_stride),
                           u32(weight.offset),
                           u32(bias.offset),
                           u32(out.offset),
                           u32(out.row_stride),
                           eps,
                           y != nullptr ? u32(y->offset) : 0u,
                           y != nullptr ? u32(y->row_stride) : 0u};
  if (y != nullptr) {
    dispatch("add_layer_norm", {bind(x), bind(weight), bind(bias), bind(out), bind(*y)}, &push,
             sizeof push, linear_groups(u32(x.rows)), KernelClass::kNorm);
  } else {
    dispatch("layer_norm", {bind(x), bind(weight), bind(bias), bind(out)}, &push, sizeof push,
             linear_groups(u32(x.rows)), KernelClass::kNorm);
  }
}

Tensor VulkanBackend::vec4_aligned(const Tensor& x) {
  if (x.offset % 4 == 0 && x.row_stride % 4 == 0) return x;
  Tensor copy =
      create_tensor(x.rows, (x.cols + 3) / 4 * 4, BufferPurpose::kActivations).columns(0, x.cols);
  std::vector<int32_t> rows(static_cast<size_t>(x.rows));
  std::iota(rows.begin(), rows.end(), 0);
  gather_rows(x, rows, copy);
  return copy;
}

void VulkanBackend::matmul(const Tensor& x_in, const WeightMatrix& w, const Tensor* bias,
                           Tensor& out) {
  assert(x_in.cols == w.cols && out.cols == w.rows && out.rows == x_in.rows);
  if (lanes_kernel_) {
    const bool decode = x_in.rows <= kMatrixVectorMaxTokens;
    record_lanes_matmul(vec4_aligned(x_in), w, bias, out,
                        decode ? decode_tile(x_in.rows) : prefill_tile(w.type, w.rows));
    return;
  }
  const bool vector_kernel = x_in.rows <= kMatrixVectorMaxTokens || !workgroup_tiles_;
  const Tensor x = vector_kernel ? vec4_aligned(x_in) : x_in;
  const std::string shader =
      std::string(vector_kernel ? "matmul_vec_" : "matmul_tiled_") + type_suffix(w.type);
  // Tokens per pass of the matrix-vector kernel: 1, 2, 4 or 8, the fewest that hold a step;
  // weight rows per invocation: 8 when passes repeat (prefill), so each x load serves more.
  uint32_t tokens_per_pass = 1;
  while (tokens_per_pass < 8 && tokens_per_pass < x.rows) tokens_per_pass *= 2;
  const uint32_t rows_per_invocation = x.rows > 8 ? 8 : 4;
  for (const WeightChunk& chunk : weights_of(w).chunks) {
    const MatmulPush push = matmul_push(x, w, chunk, bias, out);
    const BufferRange bias_range = bias != nullptr ? bind(*bias) : bind(x);  // unused if no bias
    const BufferRange weights = range_of(chunk.storage->get());
    if (vector_kernel) {
      // 16 invocations per group.
      dispatch(shader, {weights, bind(x), bind(out), bias_range}, &push, sizeof push,
               linear_groups(groups_for(chunk.rows, 16 * rows_per_invocation)),
               KernelClass::kMatmul, {tokens_per_pass, rows_per_invocation});
    } else {
      dispatch(shader, {weights, bind(x), bind(out), bias_range}, &push, sizeof push,
               {groups_for(chunk.rows, 32), groups_for(x.rows, 32), 1}, KernelClass::kMatmul);
    }
  }
}

void VulkanBackend::record_lanes_matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias,
                                        Tensor& out, const LanesTile& tile) {
  const std::string shader = "matmul_lanes_" + type_suffix(w.type);
  for (const WeightChunk& chunk : weights_of(w).chunks) {
    const MatmulPush push = matmul_push(x, w, chunk, bias, out);
    const BufferRange bias_range = bias != nullptr ? bind(*bias) : bind(x);  // unused if no bias
    const WorkgroupCount groups{groups_for(x.rows, tile.tokens),
                                groups_for(chunk.rows, tile.group_size * tile.rows), 1};
    dispatch(shader, {range_of(chunk.storage->get()), bind(x), bind(out), bias_range}, &push,
             sizeof push, groups, KernelClass::kMatmul, {tile.rows, tile.tokens, tile.group_size});
  }
}

void VulkanBackend::rope(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
                         const RopeSpec& rope) {
  assert(static_cast<int64_t>(positions.size()) == x.rows && x.cols % head_dim == 0 &&
         head_dim % 2 == 0);
  record_rope(x, nullptr, head_dim, positions, rope);
}

void VulkanBackend::rope_qk(Tensor& q, Tensor& k, int64_t head_dim,
                            std::span<const int32_t> positions, const RopeSpec& rope) {
  assert(static_cast<int64_t>(positions.size()) == q.rows && q.rows == k.rows &&
         q.cols % head_dim == 0 && k.cols % head_dim == 0 && head_dim % 2 == 0);
  // One dispatch rotates both, so they must not share an element (it would turn twice at once).
  if (!disjoint_views(q, k)) {
    throw InputError("rope_qk: the queries and keys overlap; rope them one at a time");
  }
  record_rope(q, &k, head_dim, positions, rope);
}

void VulkanBackend::record_rope(const Tensor& x0, const Tensor* x1, int64_t head_dim,
                                std::span<const int32_t> positions, const RopeSpec& rope) {
  const int64_t half = head_dim / 2;
  std::vector<float> table(static_cast<size_t>(x0.rows * half * 2));
  for (int64_t r = 0; r < x0.rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double theta = rope.angle(positions[r], i, head_dim);
      table[static_cast<size_t>((r * half + i) * 2)] = static_cast<float>(std::cos(theta));
      table[static_cast<size_t>((r * half + i) * 2 + 1)] = static_cast<float>(std::sin(theta));
    }
  }
  const BufferRange table_buffer = recorder_->upload(
      {reinterpret_cast<const uint8_t*>(table.data()), table.size() * sizeof(float)});
  const Tensor& second = x1 != nullptr ? *x1 : x0;
  // Normal mode with 4-aligned views: two adjacent pairs per invocation, 16 bytes at a time.
  const auto aligned = [](const Tensor& t) {
    return t.cols % 4 == 0 && t.offset % 4 == 0 && t.row_stride % 4 == 0;
  };
  const uint32_t pair_step = !rope.neox && half % 2 == 0 && aligned(x0) && aligned(second) ? 2 : 1;
  const RopePush push{u32(x0.rows),       u32(half),
                      u32(x0.cols / 2),   u32(x0.offset),
                      u32(x0.row_stride), u32(second.cols / 2),
                      u32(second.offset), u32(second.row_stride),
                      rope.neox ? 1u : 0u, pair_step};
  WorkgroupCount groups =
      elementwise_groups(x0.rows, std::max(x0.cols, second.cols) / 2 / pair_step);
  groups.z = x1 != nullptr ? 2 : 1;
  if (!workgroup_tiles_) groups.y = std::min(groups.y, kCpuRowGroups);
  dispatch("rope", {bind(x0), table_buffer, bind(second)}, &push, sizeof push, groups,
           KernelClass::kOther);
}

void VulkanBackend::gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) {
  assert(src.cols == dst.cols && dst.rows == static_cast<int64_t>(rows.size()));
  for (const int32_t row : rows) {
    if (row < 0 || row >= src.rows) {
      throw InputError("gather_rows: row " + std::to_string(row) + " is outside the source (0.." +
                       std::to_string(src.rows - 1) + ")");
    }
  }
  if (rows.empty()) return;
  const GatherPush push{u32(dst.rows),       u32(src.cols),   u32(src.offset),
                        u32(src.row_stride), u32(dst.offset), u32(dst.row_stride)};
  dispatch("gather_rows", {bind(src), bind(dst), recorder_->upload(as_bytes(rows))}, &push,
           sizeof push, elementwise_groups(dst.rows, dst.cols), KernelClass::kOther);
}

KvStore VulkanBackend::create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) {
  check_kv_store_shape(type, slots, kv_dim);
  const uint64_t row_bytes = gguf::row_bytes(type, kv_dim);
  // Whole 16 bytes: the shaders read F32 and F16 stores as vec4 / uvec2 entries.
  const auto part_bytes = [&](int64_t part_slots) {
    return (row_bytes * static_cast<uint64_t>(part_slots) + 15) / 16 * 16;
  };
  // As many slots per part as one binding holds: all of them when the store fits one.
  int64_t part_slots = slots;
  if (part_bytes(slots) > max_binding_bytes_) {
    part_slots = static_cast<int64_t>(max_binding_bytes_ / row_bytes);
    while (part_slots > 0 && part_bytes(part_slots) > max_binding_bytes_) --part_slots;
  }
  const int64_t parts = part_slots > 0 ? (slots + part_slots - 1) / part_slots : 0;
  if (parts == 0 || parts > kKvMaxParts) {
    throw BackendError(
        "Vulkan: a KV store of " + std::to_string(slots) + " slots x " + std::to_string(row_bytes) +
        " bytes per layer (" + std::to_string(part_bytes(slots)) +
        " bytes for keys, as many for values) is larger than " + std::to_string(kKvMaxParts) +
        " of the device's largest storage bindings (" + std::to_string(max_binding_bytes_) +
        " bytes each); use fewer KV slots or a smaller KV type (f16, q8_0)");
  }
  prepare_kv_pipelines(type, parts > 1 ? static_cast<uint32_t>(part_slots) : 0);
  auto zeroed_side = [&] {
    auto side = std::make_shared<KvSideStorage>();
    side->part_slots = part_slots;
    for (int64_t first = 0; first < slots; first += part_slots) {
      const int64_t rows = std::min(part_slots, slots - first);
      side->parts.push_back(std::make_unique<OwnedAllocation>(
          device_memory_, device_memory_->allocate(part_bytes(rows), BufferPurpose::kKvCache)));
      recorder_->fill_zero(range_of(side->parts.back()->get()));
    }
    return side;
  };
  return KvStore{zeroed_side(), zeroed_side(), type, slots, kv_dim};
}

BufferRange VulkanBackend::upload_batch(const AttentionBatch& batch) {
  std::vector<int32_t> ints;
  ints.reserve(batch.positions.size() * 2 + batch.slot_map.size());
  for (const auto* part : {&batch.positions, &batch.context_offsets, &batch.slot_map}) {
    ints.insert(ints.end(), part->begin(), part->end());
  }
  return recorder_->upload_reused(as_bytes(ints));
}

void VulkanBackend::store_kv(const Tensor& keys, const Tensor& values,
                             std::span<const int32_t> slots, KvStore& store) {
  assert(keys.rows == values.rows && keys.rows == static_cast<int64_t>(slots.size()) &&
         keys.cols == store.kv_dim && values.cols == store.kv_dim);
  for (const int32_t slot : slots) check_slot(slot, store);
  if (keys.rows == 0) return;
  const StoreKvPush push{u32(keys.rows),       u32(store.kv_dim),  u32(keys.offset),
                         u32(keys.row_stride), u32(values.offset), u32(values.row_stride)};
  const int64_t blocks = keys.rows * ((store.kv_dim + kStoreKvBlock - 1) / kStoreKvBlock);
  WorkgroupCount groups = linear_groups(groups_for(blocks, 64));
  groups.z = 2;  // keys, values
  const KvBindings kv = kv_bindings(store);
  std::vector<BufferRange> bindings = {
      bind(keys), bind(values), recorder_->upload_reused(as_bytes(slots)), kv.keys, kv.values};
  bindings.insert(bindings.end(), kv.extra.begin(), kv.extra.end());
  const bool split = !kv.extra.empty();
  const std::array<uint32_t, 1> constants{kv.part_slots};
  dispatch(std::string(split ? "store_kv_split_" : "store_kv_") + type_suffix(store.type), bindings,
           &push, sizeof push, groups, KernelClass::kAttention,
           std::span(constants).first(split ? 1 : 0));
}

void VulkanBackend::copy_kv_slots(KvStore& store, int32_t from, int32_t to, int32_t count) {
  check_kv_slot_copy(store, from, to, count);
  const uint64_t row_bytes = gguf::row_bytes(store.type, store.kv_dim);
  for (const std::shared_ptr<Buffer>* buffer : {&store.keys, &store.values}) {
    const KvSideStorage& side = kv_side(*buffer);
    // One vkCmdCopyBuffer per run of slots that stays within one part at each end.
    for (int64_t i = 0; i < count;) {
      const int64_t src = from + i;
      const int64_t dst = to + i;
      const int64_t run = std::min({count - i, side.part_slots - src % side.part_slots,
                                    side.part_slots - dst % side.part_slots});
      const VkBufferCopy region{static_cast<VkDeviceSize>(src % side.part_slots) * row_bytes,
                                static_cast<VkDeviceSize>(dst % side.part_slots) * row_bytes,
                                static_cast<VkDeviceSize>(run) * row_bytes};
      recorder_->copy(range_of(side.parts[static_cast<size_t>(src / side.part_slots)]->get()),
                      range_of(side.parts[static_cast<size_t>(dst / side.part_slots)]->get()),
                      std::span(&region, 1));
      i += run;
    }
  }
}

void VulkanBackend::attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                              const AttentionBatch& batch, Tensor& out, Tensor* weights) {
  if (shape.head_dim > kMaxAttentionHeadDim) {
    throw BackendError("Vulkan: head dimension " + std::to_string(shape.head_dim) +
                       " is larger than the attention kernel's " +
                       std::to_string(kMaxAttentionHeadDim));
  }
  assert(shape.n_heads % shape.n_kv_heads == 0 &&
         shape.n_kv_heads * shape.head_dim == store.kv_dim &&
         q.cols == shape.n_heads * shape.head_dim && out.cols == q.cols && out.rows == q.rows);
  check_attention_batch(batch, q.rows, store);
  assert(weights == nullptr || weights->rows == q.rows * shape.n_heads);
  if (q.rows == 0) return;
  const uint32_t n = u32(q.rows);
  const AttentionPush push{u32(shape.head_dim),
                           u32(shape.n_heads / shape.n_kv_heads),
                           u32(store.kv_dim),
                           u32(q.offset),
                           u32(q.row_stride),
                           u32(out.offset),
                           u32(out.row_stride),
                           shape.score_scale(),
                           u32(shape.n_heads),
                           n,
                           0,  // upload_batch: positions, context offsets, slot map
                           n,
                           2 * n,
                           weights != nullptr ? u32(weights->offset) : 0u,
                           weights != nullptr ? u32(weights->row_stride) : 0u,
                           shape.softcap,
                           u32(std::max<int64_t>(shape.window, 0))};
  const BufferRange batch_range = upload_batch(batch);
  const KvBindings kv = kv_bindings(store);
  // A capture binds the weights as a sixth buffer of the capture variant of the kernel; a
  // split store its further parts after those.
  std::vector<BufferRange> bindings = {bind(q), kv.keys, kv.values, batch_range, bind(out)};
  if (weights != nullptr) bindings.push_back(bind(*weights));
  bindings.insert(bindings.end(), kv.extra.begin(), kv.extra.end());
  const bool split_store = !kv.extra.empty();
  const std::string suffix = std::string(weights != nullptr ? "capture_" : "") +
                             (split_store ? "split_" : "") + type_suffix(store.type);
  const bool rows_kernel =
      !workgroup_tiles_ && shape.head_dim % 4 == 0 && vec4_view(q) && vec4_view(out);
  if (rows_kernel) {
    const int64_t pairs = shape.n_heads * q.rows;
    // Split and shared keys need subgroups of >= 8 lanes that shuffle (as matmul_lanes does).
    const AttentionRowsMode mode = attention_rows_mode(pairs, lanes_kernel_);
    const uint32_t groups = mode.share_keys > 1
                                ? u32(shape.n_heads) * groups_for(q.rows, mode.share_keys)
                                : groups_for(pairs * mode.split, mode.group_size);
    dispatch("attention_rows_" + suffix, bindings, &push, sizeof push, linear_groups(groups),
             KernelClass::kAttention,
             attention_rows_constants(mode, split_store ? kv.part_slots : 0u, shape.head_dim));
    return;
  }
  if (q.rows > 65535) throw BackendError("Vulkan: more than 65535 query rows in one step");
  const std::array<uint32_t, 1> constants{kv.part_slots};
  dispatch("attention_" + suffix, bindings, &push, sizeof push, {u32(shape.n_heads), n, 1},
           KernelClass::kAttention, std::span(constants).first(split_store ? 1 : 0));
}

void VulkanBackend::add(Tensor& x, const Tensor& y) {
  assert(x.rows == y.rows && x.cols == y.cols);
  const TwoViewPush push{u32(x.rows),       u32(x.cols),   u32(x.offset),
                         u32(x.row_stride), u32(y.offset), u32(y.row_stride)};
  dispatch("add", {bind(x), bind(y)}, &push, sizeof push, elementwise_groups(x.rows, x.cols),
           KernelClass::kOther);
}

void VulkanBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  record_gated("silu_mul", gate, up, out);
}

void VulkanBackend::record_gated(const std::string& shader, const Tensor& gate, const Tensor& up,
                                 Tensor& out) {
  assert(gate.rows == up.rows && gate.cols == up.cols && out.rows == gate.rows &&
         out.cols == gate.cols);
  const SiluMulPush push{u32(gate.rows), u32(gate.cols),     u32(gate.offset), u32(gate.row_stride),
                         u32(up.offset), u32(up.row_stride), u32(out.offset),  u32(out.row_stride)};
  // 4 columns per invocation where every offset, stride and the width allow 16-byte accesses.
  const bool vec4 = gate.cols % 4 == 0 && gate.offset % 4 == 0 && gate.row_stride % 4 == 0 &&
                    up.offset % 4 == 0 && up.row_stride % 4 == 0 && out.offset % 4 == 0 &&
                    out.row_stride % 4 == 0;
  WorkgroupCount groups = elementwise_groups(gate.rows, vec4 ? gate.cols / 4 : gate.cols);
  if (!workgroup_tiles_) groups.y = std::min(groups.y, kCpuRowGroups);
  dispatch(vec4 ? shader + "_vec4" : shader, {bind(gate), bind(up), bind(out)}, &push, sizeof push,
           groups, KernelClass::kOther);
}

void VulkanBackend::gelu(Tensor& x) {
  const GeluPush push{u32(x.rows), u32(x.cols), u32(x.offset), u32(x.row_stride)};
  dispatch("gelu", {bind(x)}, &push, sizeof push, elementwise_groups(x.rows, x.cols),
           KernelClass::kOther);
}

void VulkanBackend::gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  record_gated("gelu_mul", gate, up, out);
}

void VulkanBackend::scale(Tensor& x, float factor) { record_scale("scale", x, factor); }

void VulkanBackend::soft_cap(Tensor& x, float cap) {
  assert(cap > 0.0f);
  record_scale("soft_cap", x, cap);
}

void VulkanBackend::record_scale(const std::string& shader, Tensor& x, float value) {
  const ScalePush push{u32(x.rows), u32(x.cols), u32(x.offset), u32(x.row_stride), value};
  dispatch(shader, {bind(x)}, &push, sizeof push, elementwise_groups(x.rows, x.cols),
           KernelClass::kOther);
}

}  // namespace servescope::compute::vulkan

// --- device probe ---------------------------------------------------------------------------

namespace servescope::compute::vulkan {

double VulkanBackend::time_alone(const std::string& shader,
                                 std::initializer_list<BufferRange> bindings, const void* push,
                                 uint32_t push_bytes, WorkgroupCount groups) {
  finish();
  const auto start = std::chrono::steady_clock::now();
  dispatch(shader, bindings, push, push_bytes, groups, KernelClass::kOther);
  finish();
  const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - start;
  const StepTimings& step = recorder_->last_step();
  return step.available && !step.kernels.empty() ? step.kernels.front().milliseconds : wall.count();
}

DeviceRoofs VulkanBackend::measure_roofs(bool timestamps_after) {
  set_timestamps(true);  // device time where the device can tell it
  constexpr int kRuns = 5;
  constexpr uint32_t kGroups = 64;  // x 16 invocations; each streams its own run
  constexpr int64_t kInvocations = int64_t{kGroups} * 16;
  DeviceRoofs roofs;
  // 64 MiB (or the largest binding), a whole number of 4-vec4 rounds of all invocations.
  const int64_t round_floats = kInvocations * 4 * 4;
  const int64_t floats =
      std::min<int64_t>(int64_t{16} << 20, static_cast<int64_t>(max_binding_bytes_ / 4)) /
      round_floats * round_floats;
  const Tensor source = create_tensor(1, floats, BufferPurpose::kScratch);
  const Tensor sums = create_tensor(1, kInvocations * 4, BufferPurpose::kScratch);

  const uint32_t iterations = u32(floats / round_floats);
  double best_ms = INFINITY;
  for (int run = 0; run < kRuns; ++run) {
    best_ms = std::min(best_ms, time_alone("probe_stream", {bind(source), bind(sums)}, &iterations,
                                           sizeof iterations, {kGroups, 1, 1}));
  }
  roofs.memory_gb_per_s = static_cast<double>(floats) * 4.0 / (best_ms * 1e6);

  // The matrix-vector kernel on a 64 MiB F32 matrix streams too, and on some devices
  // (lavapipe) faster than any plain streaming kernel tried: the roof is the better of the two.
  {
    constexpr int64_t kSide = 4096;
    const std::vector<uint8_t> zeros(static_cast<size_t>(kSide * kSide) * sizeof(float), 0);
    const WeightMatrix w = upload_matrix(gguf::GgmlType::F32, kSide, kSide, zeros);
    const Tensor x = create_tensor(1, kSide, BufferPurpose::kScratch);
    Tensor y = create_tensor(1, kSide, BufferPurpose::kScratch);
    double matvec_ms = INFINITY;
    for (int run = 0; run < kRuns; ++run) {
      finish();
      const auto start = std::chrono::steady_clock::now();
      matmul(x, w, nullptr, y);
      finish();
      const std::chrono::duration<double, std::milli> wall =
          std::chrono::steady_clock::now() - start;
      const StepTimings& step = recorder_->last_step();
      matvec_ms = std::min(matvec_ms, step.available ? step.gpu_milliseconds : wall.count());
    }
    roofs.memory_gb_per_s =
        std::max(roofs.memory_gb_per_s, static_cast<double>(zeros.size()) / (matvec_ms * 1e6));
  }

  // Grow the loop until one run takes long enough to time reliably (about 20 ms).
  ProbeFlopsPush push{16, 1.0f};
  constexpr uint32_t kFlopGroups = 64;  // x 256 invocations
  double ms = time_alone("probe_flops", {bind(sums)}, &push, sizeof push, {kFlopGroups, 1, 1});
  while (ms < 20.0 && push.iterations < (1u << 20)) {
    push.iterations *= 4;
    ms = time_alone("probe_flops", {bind(sums)}, &push, sizeof push, {kFlopGroups, 1, 1});
  }
  best_ms = ms;
  for (int run = 1; run < kRuns; ++run) {
    best_ms = std::min(
        best_ms, time_alone("probe_flops", {bind(sums)}, &push, sizeof push, {kFlopGroups, 1, 1}));
  }
  const double flops = double(kFlopGroups) * 256.0 * push.iterations * 8 * 4 * 2;
  roofs.compute_gflop_per_s = flops / (best_ms * 1e6);
  set_timestamps(timestamps_after);
  return roofs;
}

bool VulkanBackend::set_kernel_spans(bool on) {
  if (!recorder_->device_has_timestamps()) return false;
  recorder_->set_spans(on);
  return true;
}

std::string VulkanBackend::why_no_kernel_spans() const {
  if (recorder_->device_has_timestamps()) return {};
  return "Vulkan device \"" + context_->description().name +
         "\" has no timestamp queries on its compute queue (timestampValidBits 0 or "
         "timestampPeriod 0), so single dispatches cannot be timed";
}

telemetry::KernelTimes VulkanBackend::take_kernel_times() {
  const std::array<double, kKernelClassCount> ms = recorder_->take_class_milliseconds();
  telemetry::KernelTimes times;
  times.matmul_ms = ms[static_cast<size_t>(KernelClass::kMatmul)];
  times.attention_ms = ms[static_cast<size_t>(KernelClass::kAttention)];
  times.norm_ms = ms[static_cast<size_t>(KernelClass::kNorm)];
  times.other_ms = ms[static_cast<size_t>(KernelClass::kOther)];
  return times;
}

}  // namespace servescope::compute::vulkan
