#include "engine/telemetry/kv_event.h"

namespace servescope::telemetry {

std::string_view kv_event_kind_name(KvEventKind kind) {
  switch (kind) {
    case KvEventKind::kAllocate:
      return "allocate";
    case KvEventKind::kPrefixHit:
      return "prefix_hit";
    case KvEventKind::kAppend:
      return "append";
    case KvEventKind::kFree:
      return "free";
    case KvEventKind::kPreempt:
      return "preempt";
    case KvEventKind::kEvict:
      return "evict";
    case KvEventKind::kWrite:
      return "write";
    case KvEventKind::kIndex:
      return "index";
    case KvEventKind::kFork:
      return "fork";
    case KvEventKind::kCopyOnWrite:
      return "copy_on_write";
  }
  return "unknown";
}

}  // namespace servescope::telemetry
