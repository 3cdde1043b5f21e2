// What this CPU's vector units offer, read once: the kernels pick their variants by these. Each
// level includes AVX2 with FMA and F16C, which every vector kernel here also uses. All false
// off x86-64.
#pragma once

namespace servescope::compute {

bool cpu_has_avx2();         // AVX2, FMA, F16C
bool cpu_has_avx_vnni();     // and AVX-VNNI (256-bit vpdpbusd)
bool cpu_has_avx512();       // and AVX-512F
bool cpu_has_avx512_bw();    // and AVX-512F, BW, VL
bool cpu_has_avx512_vnni();  // and AVX-512F, BW, VL, VNNI

}  // namespace servescope::compute
