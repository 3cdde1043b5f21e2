#include <utility>

#include "engine/core/error.h"
#include "engine/telemetry/observer.h"

namespace servescope::telemetry {

TelemetryQueue::TelemetryQueue(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) throw InputError("telemetry queue capacity must be at least 1");
}

void TelemetryQueue::push(TelemetryItem item) {
  std::lock_guard lock(mutex_);
  // A full queue loses its oldest record: the newest state is what a live view needs.
  if (items_.size() == capacity_) {
    items_.pop_front();
    ++dropped_;
  }
  items_.push_back(std::move(item));
}

std::vector<TelemetryItem> TelemetryQueue::drain() {
  std::deque<TelemetryItem> taken;
  {
    std::lock_guard lock(mutex_);
    taken.swap(items_);
  }
  return {std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end())};
}

uint64_t TelemetryQueue::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace servescope::telemetry
