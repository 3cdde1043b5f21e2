// Constants of the GGUF container shared by the reader and the writer.
#pragma once

#include <cstdint>
#include <string_view>

namespace servescope::gguf {

constexpr std::string_view kGgufMagic = "GGUF";
constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr uint64_t kDefaultAlignment = 32;
// GGML's quantisation format version (GGML_QNT_VERSION), a uint32 in every file llama.cpp
// writes; version 2 is the block layouts of ggml_types.h.
constexpr std::string_view kQuantizationVersionKey = "general.quantization_version";
constexpr uint32_t kQuantizationVersion = 2;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Real files nest at most one level (arrays of arrays are rare); the bound keeps a hostile
// file from exhausting the stack.
constexpr int kMaxArrayDepth = 8;

}  // namespace servescope::gguf
