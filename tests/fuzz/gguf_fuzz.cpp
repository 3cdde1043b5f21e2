// libFuzzer target for the GGUF reader: any input must either load or raise a
// servescope::Error. Loaded tensors are read in full to prove their bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"

namespace {

// Reads every byte of every tensor and dequantises its first row; ASan catches any byte that
// lies outside the buffer.
void touch_tensors(const servescope::gguf::GgufFile& file) {
  using namespace servescope::gguf;
  volatile uint8_t sink = 0;
  std::vector<float> row;
  for (const TensorInfo& tensor : file.tensors()) {
    uint8_t sum = 0;
    for (uint64_t i = 0; i < tensor.n_bytes; ++i) sum = static_cast<uint8_t>(sum + tensor.data[i]);
    sink = static_cast<uint8_t>(sink + sum);
    row.resize(static_cast<size_t>(tensor.shape[0]));
    dequantize_row(tensor.type, tensor.data, row.data(), tensor.shape[0]);
  }
  // Touch the metadata accessors too.
  for (const auto& [key, value] : file.metadata()) {
    if (value.is_integer()) {
      try {
        sink = static_cast<uint8_t>(sink + static_cast<uint8_t>(value.as_int()));
      } catch (const servescope::Error&) {
      }
    }
    if (file.find(key) == nullptr) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = servescope::gguf::GgufFile::from_bytes(
        std::vector<uint8_t>(data, data + size), "fuzz.gguf");
    touch_tensors(file);
  } catch (const servescope::Error&) {
    // Rejected cleanly: what the reader must do with bad input.
  }
  return 0;
}
