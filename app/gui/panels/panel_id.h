// The seven panels of the window, by the names the command line and settings use.
#pragma once

#include <QString>
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace servescope::gui {

enum class PanelId {
  kPhases,
  kKvCache,
  kBatching,
  kQuantisation,
  kRoofline,
  kAttention,
  kTimeline
};

// In tab order (the lecture's number keys follow it).
inline constexpr std::array<PanelId, 7> kAllPanels = {
    PanelId::kPhases,   PanelId::kKvCache,   PanelId::kBatching, PanelId::kQuantisation,
    PanelId::kRoofline, PanelId::kAttention, PanelId::kTimeline};

// "phases", "kv", "batching", "quantisation", "roofline", "attention", "timeline".
std::string_view panel_key(PanelId panel);
// The tab title: "Phases", "KV cache", ...
std::string_view panel_title(PanelId panel);
// The title in the user's language, for what the window shows.
QString panel_title_text(PanelId panel);
std::optional<PanelId> parse_panel_key(std::string_view key);
// Every panel's key in tab order, joined: "phases, kv, ..., timeline" for `separator` ", ".
std::string panel_keys(std::string_view separator);

// One bit per panel, for "which panels have new data".
using PanelMask = unsigned;
constexpr PanelMask panel_bit(PanelId panel) { return 1u << static_cast<unsigned>(panel); }
inline constexpr PanelMask kAllPanelBits = (1u << kAllPanels.size()) - 1;

}  // namespace servescope::gui
