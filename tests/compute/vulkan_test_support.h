// Shared by the Vulkan tests: a backend with the validation layer on (any message it reports
// fails the test), and a visible skip when this machine has no Vulkan device at all.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"

namespace servescope::compute::vulkan {

// Empty when a Vulkan device exists; otherwise why the Vulkan tests are skipped.
inline std::string reason_to_skip_vulkan() {
  try {
    if (list_devices().empty()) return "no Vulkan device on this machine";
  } catch (const Error& e) {
    return std::string("no usable Vulkan loader or device: ") + e.what();
  }
  return {};
}

// Turns the validation layer on for every backend this process creates (also those made by
// load_model through the backend factory).
inline void enable_validation() { setenv("SERVESCOPE_VULKAN_VALIDATION", "1", 1); }

inline void expect_validation_clean(const ValidationLog& log) {
  for (const std::string& message : log.messages()) ADD_FAILURE() << message;
}

#define SERVESCOPE_SKIP_WITHOUT_VULKAN()                                                   \
  do {                                                                                     \
    if (const std::string reason = ::servescope::compute::vulkan::reason_to_skip_vulkan(); \
        !reason.empty()) {                                                                 \
      GTEST_SKIP() << "Vulkan tests skipped: " << reason;                                  \
    }                                                                                      \
  } while (false)

}  // namespace servescope::compute::vulkan
