// The routing view's colors and small drawing helpers (routing_view.cpp): text, sections and
// their captions, rank bands, tooltips' hit tests. In their own namespace: every lab's view
// keeps file-local helpers of these names.
#pragma once

#include <imgui.h>

#include <string>

#include "viz/model/panels.h"

namespace dtl::viz::routing_ui {

inline constexpr ImU32 kText = IM_COL32(220, 220, 225, 255), kDim = IM_COL32(160, 160, 170, 255),
                       kInk = IM_COL32(15, 15, 20, 255), kEmpty = IM_COL32(40, 40, 48, 255),
                       kLine = IM_COL32(20, 20, 26, 255), kSeparator = IM_COL32(235, 235, 240, 230),
                       kDrop = IM_COL32(240, 60, 60, 255), kCapacity = IM_COL32(255, 220, 60, 255),
                       kMean = IM_COL32(170, 170, 180, 200);

bool light(ImU32 c);               // dark text on it
ImU32 choice_color(int j, int k);  // choice rank j of k: four hues, more as a ramp
ImU32 heat(double t);              // 0..1: dark (none) → bright (the most)
std::string ordinal(int j);        // 0 → "1st"
[[gnu::format(printf, 1, 2)]] std::string text_of(const char* fmt, ...);
float text_w(const std::string& s);

// A section: its title on top (wrapped); returns the room below it, less the caption's height.
Rect section(ImDrawList* dl, const Rect& s, const char* title, const std::string& caption);
void caption(ImDrawList* dl, const Rect& s, float y, const std::string& text);            // wrapped to the section
void centered(ImDrawList* dl, ImVec2 a, ImVec2 z, ImU32 color, const std::string& text);  // when it fits
void rank_band(ImDrawList* dl, int p, ImVec2 a, ImVec2 z);  // labelled "rank p", or "rp" where narrow
void dashed(ImDrawList* dl, float x0, float x1, float y, ImU32 color);
bool hovering(ImVec2 a, ImVec2 z);  // the mouse in [a, z) over this window

}  // namespace dtl::viz::routing_ui
