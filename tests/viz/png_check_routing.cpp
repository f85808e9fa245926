// png_check_routing IMAGE: a screenshot of dtlab-viz --view routing on the experts lab's
// trace with hot experts (--router-skew), 1400 × 800. In the routing picture (the left 40%,
// below the header and its legend) the 1st and 2nd choices' colors are drawn, and so are
// dropped slots in the drop color, every one of them inside the experts' columns: drawn in
// the column of the expert that was full, not in a separate column at the right (the view's
// colors: viz/views/experts/routing_draw.h).
#include <stb/stb_image.h>

#include <algorithm>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_routing IMAGE\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_routing: cannot read %s\n", argv[1]);
    return 1;
  }
  long first = 0, second = 0, dropped = 0;
  int x0 = w, x1 = -1, drop_x0 = w, drop_x1 = -1;  // the choices' columns, the drops'
  for (int y = h * 15 / 100; y < h; ++y)
    for (int x = 0; x < w * 40 / 100; ++x) {
      const unsigned char* p = px + 3 * (long(y) * w + x);
      const bool a = p[0] == 255 && p[1] == 214 && p[2] == 64, b = p[0] == 90 && p[1] == 190 && p[2] == 255;
      const bool d = p[0] == 240 && p[1] == 60 && p[2] == 60;
      first += a, second += b, dropped += d;
      if (a || b) x0 = std::min(x0, x), x1 = std::max(x1, x);
      if (d) drop_x0 = std::min(drop_x0, x), drop_x1 = std::max(drop_x1, x);
    }
  stbi_image_free(px);
  std::printf("1st choice: %ld px, 2nd: %ld px, dropped: %ld px; choices in x %d..%d, drops in x %d..%d\n", first,
              second, dropped, x0, x1, drop_x0, drop_x1);
  const bool drawn = first >= 500 && second >= 200, drops = dropped >= 100;
  const bool inside = drops && drop_x0 >= x0 && drop_x1 <= x1;
  if (!drawn) std::fprintf(stderr, "png_check_routing: the routing picture's 1st and 2nd choices are missing\n");
  if (!drops) std::fprintf(stderr, "png_check_routing: no dropped slots drawn (hot experts should overflow)\n");
  if (drops && !inside) std::fprintf(stderr, "png_check_routing: dropped slots drawn outside the experts' columns\n");
  return drawn && inside ? 0 : 1;
}
