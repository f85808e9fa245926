// The pipeline view's colors and small drawing helpers (pipeline_view.cpp): micro-batches by
// hue, F/B/I/W fills, idle hatching, numbers as text. In their own namespace: every lab's view
// keeps file-local helpers of these names.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <string>

#include "core/trace/vocab.h"
#include "viz/views/pipeline/pipeline_model.h"

namespace dtl::viz::pipeline_ui {

inline constexpr ImU32 kText = IM_COL32(220, 220, 225, 255), kDim = IM_COL32(170, 170, 180, 255),
                       kIdle = IM_COL32(200, 70, 70, 110), kCursor = IM_COL32(255, 255, 255, 200),
                       kYellow = IM_COL32(255, 220, 60, 255);

// Micro-batches by hue (Tableau 10 without its gray and red, which stay for idle time):
// neighbours differ in hue and lightness, so 1F1B's interleaving of F and B reads at a glance.
inline constexpr ImU32 kHues[] = {IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255),
                                  IM_COL32(89, 161, 79, 255),   IM_COL32(176, 122, 161, 255),
                                  IM_COL32(118, 183, 178, 255), IM_COL32(237, 201, 72, 255),
                                  IM_COL32(156, 117, 95, 255),  IM_COL32(255, 157, 167, 255)};

ImU32 mix(ImU32 c, ImU32 to, float t);  // c moved toward `to` by t (0..1), c's alpha kept
ImU32 with_alpha(ImU32 c, int a);
bool light(ImU32 c);  // dark text on it
// A block's fill by its role (block_roles) in its micro-batch's hue: F light, a full B dark, an I
// (input gradient alone) the hue toward violet, W a dark fill (drawn outlined in the hue).
ImU32 block_fill(int micro_batch, BlockRole role);
void block_text(const PipeBlock& k, int chunks, char* out, std::size_t n);  // "3", or "3b" with chunks
void hatch(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color);                // idle time
// A triangle at the end of block [a, b] pointing down (direction +1) or up (−1): where its output goes.
void direction_mark(ImDrawList* dl, ImVec2 a, ImVec2 b, int direction, ImU32 color);
std::string percent(double share);  // "12.5 %"
std::string duration(double seconds);

}  // namespace dtl::viz::pipeline_ui
