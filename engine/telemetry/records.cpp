#include "engine/telemetry/records.h"

namespace servescope::telemetry {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kMaxTokens:
      return "max_tokens";
    case FinishReason::kStopToken:
      return "stop_token";
    case FinishReason::kContextFull:
      return "context_full";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view sequence_phase_name(SequencePhase phase) {
  switch (phase) {
    case SequencePhase::kPrefill:
      return "prefill";
    case SequencePhase::kDecode:
      return "decode";
    case SequencePhase::kRecompute:
      return "recompute";
  }
  return "unknown";
}

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMatmul:
      return "matmul";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kNorm:
      return "norm";
    case KernelKind::kOther:
      return "other";
  }
  return "unknown";
}

}  // namespace servescope::telemetry
