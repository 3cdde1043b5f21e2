// The six panels of the window, by the names the command line and settings use.
#pragma once

#include <QString>
#include <array>
#include <optional>
#include <string_view>

namespace servescope::gui {

enum class PanelId { kPhases, kKvCache, kBatching, kQuantisation, kRoofline, kAttention };

inline constexpr std::array<PanelId, 6> kAllPanels = {PanelId::kPhases,   PanelId::kKvCache,
                                                      PanelId::kBatching, PanelId::kQuantisation,
                                                      PanelId::kRoofline, PanelId::kAttention};

// "phases", "kv", "batching", "quantisation", "roofline", "attention".
std::string_view panel_key(PanelId panel);
// The tab title: "Phases", "KV cache", ...
std::string_view panel_title(PanelId panel);
// The title in the user's language, for what the window shows.
QString panel_title_text(PanelId panel);
std::optional<PanelId> parse_panel_key(std::string_view key);

// One bit per panel, for "which panels have new data".
using PanelMask = unsigned;
constexpr PanelMask panel_bit(PanelId panel) { return 1u << static_cast<unsigned>(panel); }
inline constexpr PanelMask kAllPanelBits = (1u << kAllPanels.size()) - 1;

}  // namespace servescope::gui
