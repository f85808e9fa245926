// png_check_cp IMAGE: a screenshot of dtlab-viz --view cp_attention on a ring-attention trace
// (zig-zag, 4 ranks), the cursor a few hops into the ring, 1400 × 800. In the attention
// matrix (the left half): the masked future (the view's masked color) fills the top-right
// corner and not the bottom-left one — causal, queries down and keys across — and the blocks
// at the cursor are outlined in white (viz/views/context_parallel/attention_view.cpp).
#include <stb/stb_image.h>

#include <algorithm>
#include <cstdio>

namespace {
bool is(const unsigned char* p, int r, int g, int b) { return p[0] == r && p[1] == g && p[2] == b; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_cp IMAGE\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_cp: cannot read %s\n", argv[1]);
    return 1;
  }
  auto at = [&](int x, int y) { return px + 3 * (long(y) * w + x); };
  int x0 = w, x1 = -1, y0 = h, y1 = -1;  // the masked cells' bounding box: the matrix
  long white = 0;
  for (int y = h * 10 / 100; y < h; ++y)
    for (int x = 0; x < w / 2; ++x) {
      if (is(at(x, y), 40, 40, 46))
        x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      if (is(at(x, y), 255, 255, 255)) ++white;
    }
  const bool found = x1 > x0 + 100 && y1 > y0 + 100;
  const int dx = (x1 - x0) / 10, dy = (y1 - y0) / 10;
  const bool top_right_masked = found && is(at(x1 - dx, y0 + dy), 40, 40, 46);
  const bool bottom_left_masked = found && is(at(x0 + dx, y1 - dy), 40, 40, 46);
  stbi_image_free(px);
  std::printf("matrix x %d..%d, y %d..%d; top-right masked %d, bottom-left masked %d; outline %ld px\n", x0, x1, y0, y1,
              top_right_masked, bottom_left_masked, white);
  const bool causal = top_right_masked && !bottom_left_masked, outlined = white >= 200;
  if (!causal) std::fprintf(stderr, "png_check_cp: the masked future is not the top-right triangle\n");
  if (!outlined) std::fprintf(stderr, "png_check_cp: no block at the cursor is outlined\n");
  return causal && outlined ? 0 : 1;
}
