// The attention weights the engine's thread captured for the user's request, handed to the
// GUI thread: the worker puts the newest sample, the frame timer takes it when it is new.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace servescope::gui {

struct AttentionSample {
  int64_t layer = 0;
  int64_t head = 0;
  int64_t request = -1;
  std::vector<int32_t> key_ids;  // the request's tokens at positions 0 .. keys - 1
  int64_t first_query_position = 0;
  // Row i: the softmax weights of the query at first_query_position + i over positions
  // 0 ..= first_query_position + i, as the forward pass used them.
  std::vector<std::vector<float>> rows;
};

class AttentionMailbox {
 public:
  void put(AttentionSample sample) {
    const std::lock_guard lock(mutex_);
    sample_ = std::move(sample);
    ++serial_;
  }
  // The newest sample if it is newer than `seen` (which is updated), else nothing.
  std::optional<AttentionSample> take_newer(uint64_t& seen) const {
    const std::lock_guard lock(mutex_);
    if (serial_ == seen) return std::nullopt;
    seen = serial_;
    return sample_;
  }

 private:
  mutable std::mutex mutex_;
  AttentionSample sample_;
  uint64_t serial_ = 0;
};

}  // namespace servescope::gui
