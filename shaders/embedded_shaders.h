// The compute shaders of shaders/*.comp as SPIR-V words, embedded at build time
// (shaders/CMakeLists.txt compiles them with glslc; embed_spirv.cmake writes the table).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace servescope::shaders {

struct EmbeddedShader {
  std::string_view name;  // e.g. "rms_norm", "matmul_vec_q8_0"
  std::span<const uint32_t> words;
};

std::span<const EmbeddedShader> all_shaders();

}  // namespace servescope::shaders
