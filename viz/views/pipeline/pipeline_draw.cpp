// The pipeline view's drawing helpers (pipeline_draw.h).
#include "viz/views/pipeline/pipeline_draw.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "viz/model/axes.h"

namespace dtl::viz::pipeline_ui {

ImU32 mix(ImU32 c, ImU32 to, float t) {
  auto ch = [&](int shift) {
    const float a = float((c >> shift) & 0xff), b = float((to >> shift) & 0xff);
    return ImU32(std::lround(a + (b - a) * t)) << shift;
  };
  return ch(IM_COL32_R_SHIFT) | ch(IM_COL32_G_SHIFT) | ch(IM_COL32_B_SHIFT) | (c & IM_COL32_A_MASK);
}
ImU32 with_alpha(ImU32 c, int a) { return (c & ~IM_COL32_A_MASK) | (ImU32(a) << IM_COL32_A_SHIFT); }
bool light(ImU32 c) {
  const float r = float((c >> IM_COL32_R_SHIFT) & 0xff), g = float((c >> IM_COL32_G_SHIFT) & 0xff),
              b = float((c >> IM_COL32_B_SHIFT) & 0xff);
  return 0.299f * r + 0.587f * g + 0.114f * b > 140;
}

// F: the hue lightened; B: the hue darkened; I: the hue pulled halfway to violet (a
// backward's dark, but not a full B's: the W of its micro-batch comes later); W: the hue's
// outline on a dark fill.
ImU32 block_fill(int micro_batch, BlockRole role) {
  const ImU32 hue = kHues[std::size_t(std::max(0, micro_batch)) % std::size(kHues)];
  switch (role) {
    case BlockRole::forward: return mix(hue, IM_COL32(255, 255, 255, 255), 0.45f);
    case BlockRole::backward: return mix(hue, IM_COL32(0, 0, 0, 255), 0.25f);
    case BlockRole::input_grad: return mix(hue, IM_COL32(140, 0, 255, 255), 0.55f);
    case BlockRole::weight_grad: break;
  }
  return mix(hue, IM_COL32(20, 20, 26, 255), 0.75f);
}

// "3", or with chunks "3b" (chunk 1 of micro-batch 3).
void block_text(const PipeBlock& k, int chunks, char* out, std::size_t n) {
  if (chunks <= 1)
    std::snprintf(out, n, "%d", k.micro_batch);
  else if (k.chunk < 26)
    std::snprintf(out, n, "%d%c", k.micro_batch, char('a' + k.chunk));
  else
    std::snprintf(out, n, "%d.%d", k.micro_batch, k.chunk);
}

// A small triangle at the block's end pointing where its output goes: down to a
// later stage, up to an earlier one (a V's second chunk flows back up; a loop's last stage
// sends up to stage 0); none at the model's ends and a V's turn.
void direction_mark(ImDrawList* dl, ImVec2 a, ImVec2 b, int direction, ImU32 color) {
  const float h = std::min(b.y - a.y, 10.0f) * 0.6f, w = std::min(h, (b.x - a.x) * 0.5f);
  if (direction == 0 || w < 3) return;
  const float x = b.x - w - 1, y = direction > 0 ? b.y - 1 : a.y + 1;
  dl->AddTriangleFilled(ImVec2(x, y - direction * h), ImVec2(x + w, y - direction * h), ImVec2(x + w / 2, y), color);
}

// Diagonal lines across [a, b]: idle time.
void hatch(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color) {
  if (b.x - a.x < 1) return;
  const float h = b.y - a.y, step = 6;
  dl->PushClipRect(a, b, true);
  dl->AddRectFilled(a, b, with_alpha(color, 28));
  for (float x = a.x - h; x < b.x; x += step) dl->AddLine(ImVec2(x, b.y), ImVec2(x + h, a.y), color, 1.0f);
  dl->PopClipRect();
}

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * share);
  return buf;
}

std::string duration(double seconds) { return format_duration(seconds * 1e9, seconds * 1e7, seconds * 1e9); }

}  // namespace dtl::viz::pipeline_ui
