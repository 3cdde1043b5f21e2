// Whether this test binary was built with AddressSanitizer (the ci-asan preset): memory and
// speed there are the instrumentation's, so tests of resident size or of speed-ups say so and
// skip those checks (the optimised build asserts them).
#pragma once

namespace servescope::testing_support {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace servescope::testing_support
