// Measured GPU time of the last submitted step, per dispatch and per kernel class. A plain
// struct for the phase and roofline panels; empty when the device has no timestamps.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/telemetry/records.h"

namespace servescope::compute::vulkan {

enum class KernelClass { kMatmul, kAttention, kNorm, kOther };
constexpr size_t kKernelClassCount = 4;
const char* kernel_class_name(KernelClass kind);         // "matmul", "attention", "norm", "other"
telemetry::KernelKind telemetry_kind(KernelClass kind);  // the same four classes

struct KernelTiming {
  std::string kernel;  // shader name, e.g. "matmul_vec_q8_0"
  KernelClass kind = KernelClass::kOther;
  double milliseconds = 0.0;
  int64_t layer = -1;  // the transformer layer it ran for (Backend::set_span_layer)
};

struct StepTimings {
  bool available = false;             // false: no timestamps on this device (or queries overflowed)
  std::vector<KernelTiming> kernels;  // in recorded order
  std::array<double, kKernelClassCount> class_milliseconds{};
  double gpu_milliseconds = 0.0;  // first dispatch start to last dispatch end
  uint32_t dispatches = 0;
  uint32_t submits = 0;
};

}  // namespace servescope::compute::vulkan
