#include "app/gui/panels/panel_id.h"

namespace servescope::gui {

std::string_view panel_key(PanelId panel) {
  switch (panel) {
    case PanelId::kPhases:
      return "phases";
    case PanelId::kKvCache:
      return "kv";
    case PanelId::kBatching:
      return "batching";
    case PanelId::kQuantisation:
      return "quantisation";
    case PanelId::kRoofline:
      return "roofline";
    case PanelId::kAttention:
      return "attention";
  }
  return "";
}

std::string_view panel_title(PanelId panel) {
  switch (panel) {
    case PanelId::kPhases:
      return "Phases";
    case PanelId::kKvCache:
      return "KV cache";
    case PanelId::kBatching:
      return "Batching";
    case PanelId::kQuantisation:
      return "Quantisation";
    case PanelId::kRoofline:
      return "Roofline";
    case PanelId::kAttention:
      return "Attention";
  }
  return "";
}

std::optional<PanelId> parse_panel_key(std::string_view key) {
  for (const PanelId panel : kAllPanels) {
    if (panel_key(panel) == key) return panel;
  }
  if (key == "quantization") return PanelId::kQuantisation;  // the American spelling, too
  return std::nullopt;
}

}  // namespace servescope::gui
