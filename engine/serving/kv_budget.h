// The KV cache sized by a memory budget, as serving engines size theirs (vLLM's
// gpu_memory_utilization, llama.cpp's n_ctx): the pool holds as many blocks as the budget buys,
// never more than its sequences could use, and a request's context is what fits in it. A file
// that declares a 128k context therefore costs what the budget allows, not 128k tokens per slot.
#pragma once

#include <cstdint>
#include <string>

#include "engine/serving/kv_block_pool.h"

namespace servescope::serving {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
// The budget when none is given: a few hundred MiB hold tens of thousands of tokens of a small
// model, far more than a lesson or a benchmark runs at once.
inline constexpr uint64_t kDefaultKvBudgetBytes = 256 * kMiB;

// kDefaultKvBudgetBytes, or a quarter of the memory available now when that is less (Linux's
// MemAvailable; the fixed default where it cannot be read).
uint64_t default_kv_budget_bytes();

// The machine's physical memory in bytes, 0 when unknown: the most a budget may ask for.
uint64_t physical_memory_bytes();

// The blocks `budget_bytes` buys, at most `needed_blocks` (what the sequences could ever hold)
// and at most what int32 slot indices address. InputError when not even one block fits.
int64_t kv_blocks_for_budget(const KvLayout& layout, uint64_t budget_bytes, int64_t needed_blocks);

// A size in the binary units the budget is given in: "512 bytes", "40.0 KiB", "256.0 MiB".
std::string iec_bytes(uint64_t bytes);

}  // namespace servescope::serving
