#include "engine/compute/cpu_features.h"

namespace servescope::compute {

#if defined(__x86_64__) && defined(__GNUC__)

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

bool cpu_has_avx_vnni() {
  static const bool has = cpu_has_avx2() && __builtin_cpu_supports("avxvnni");
  return has;
}

bool cpu_has_avx512() {
  static const bool has = cpu_has_avx2() && __builtin_cpu_supports("avx512f");
  return has;
}

bool cpu_has_avx512_bw() {
  static const bool has =
      cpu_has_avx512() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has;
}

bool cpu_has_avx512_vnni() {
  static const bool has = cpu_has_avx512_bw() && __builtin_cpu_supports("avx512vnni");
  return has;
}

#else

bool cpu_has_avx2() { return false; }
bool cpu_has_avx_vnni() { return false; }
bool cpu_has_avx512() { return false; }
bool cpu_has_avx512_bw() { return false; }
bool cpu_has_avx512_vnni() { return false; }

#endif

}  // namespace servescope::compute
