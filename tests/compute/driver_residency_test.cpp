// keep_libraries_loaded_since pins what was loaded after a snapshot: a library closed by its
// last user stays mapped (and so the memory it keeps stays reachable for LeakSanitizer).
#include "engine/compute/vulkan/driver_residency.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace servescope::compute::vulkan {
namespace {

const std::string kProbe = std::string(SERVESCOPE_BIN_DIR) + "/../lib/libresidency_probe.so";

bool probe_is_loaded() {
  for (const std::string& name : loaded_libraries()) {
    if (name.ends_with("libresidency_probe.so")) return true;
  }
  return false;
}

// The premise: without pinning, dlclose unmaps the library, which is what the Vulkan loader
// does to a driver in vkDestroyInstance. (ctest runs every test in a process of its own.)
TEST(DriverResidency, AClosedLibraryIsUnmappedWithoutPinning) {
  void* handle = dlopen(kProbe.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_TRUE(probe_is_loaded());
  dlclose(handle);
  EXPECT_FALSE(probe_is_loaded());
}

TEST(DriverResidency, LibrariesLoadedSinceTheSnapshotStayMapped) {
  const auto before = loaded_libraries();
  void* handle = dlopen(kProbe.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using ProbeValue = int (*)();
  const auto value = reinterpret_cast<ProbeValue>(dlsym(handle, "residency_probe_value"));
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value(), 42);
  keep_libraries_loaded_since(before);
  dlclose(handle);
  EXPECT_TRUE(probe_is_loaded());
}

TEST(DriverResidency, LibrariesLoadedBeforeTheSnapshotAreLeftAlone) {
  const auto before = loaded_libraries();
  keep_libraries_loaded_since(before);
  EXPECT_EQ(loaded_libraries(), before);
}

}  // namespace
}  // namespace servescope::compute::vulkan
