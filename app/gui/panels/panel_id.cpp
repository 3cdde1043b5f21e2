#include "app/gui/panels/panel_id.h"

#include <QCoreApplication>

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
    case PanelId::kTimeline:
      return "timeline";
  }
  return "";
}

std::string_view panel_title(PanelId panel) {
  switch (panel) {
    case PanelId::kPhases:
      return QT_TRANSLATE_NOOP("PanelId", "Phases");
    case PanelId::kKvCache:
      return QT_TRANSLATE_NOOP("PanelId", "KV cache");
    case PanelId::kBatching:
      return QT_TRANSLATE_NOOP("PanelId", "Batching");
    case PanelId::kQuantisation:
      return QT_TRANSLATE_NOOP("PanelId", "Quantisation");
    case PanelId::kRoofline:
      return QT_TRANSLATE_NOOP("PanelId", "Roofline");
    case PanelId::kAttention:
      return QT_TRANSLATE_NOOP("PanelId", "Attention");
    case PanelId::kTimeline:
      return QT_TRANSLATE_NOOP("PanelId", "Timeline");
  }
  return "";
}

QString panel_title_text(PanelId panel) {
  return QCoreApplication::translate("PanelId", panel_title(panel).data());
}

std::string panel_keys(std::string_view separator) {
  std::string out;
  for (const PanelId panel : kAllPanels) {
    if (!out.empty()) out += separator;
    out += panel_key(panel);
  }
  return out;
}

std::optional<PanelId> parse_panel_key(std::string_view key) {
  for (const PanelId panel : kAllPanels) {
    if (panel_key(panel) == key) return panel;
  }
  if (key == "quantization") return PanelId::kQuantisation;  // the American spelling, too
  return std::nullopt;
}

}  // namespace servescope::gui
