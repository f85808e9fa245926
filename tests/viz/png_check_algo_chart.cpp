// png_check_algo_chart IMAGE SERIES: a screenshot of dtlab-viz --which-algorithm. Each series
// is a line in its own colour (series_color, viz/app/algo_chart_view.cpp) across the chart;
// the legend's swatch alone is under 100 pixels of it. Fewer than SERIES colours with at
// least kLinePixels pixels: the lines are not drawn.
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>

namespace {
constexpr unsigned char kColors[9][3] = {{150, 200, 255}, {80, 150, 240}, {30, 90, 210},   // ring LL, LL128, Simple
                                         {255, 205, 130}, {245, 150, 60}, {200, 95, 20},   // tree
                                         {160, 235, 150}, {90, 200, 90},  {40, 150, 50}};  // nvls
constexpr long kLinePixels = 300;
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: png_check_algo_chart IMAGE SERIES\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_algo_chart: cannot read %s\n", argv[1]);
    return 1;
  }
  long count[9] = {};
  for (long i = 0; i < long(w) * h; ++i) {
    const unsigned char* p = px + 3 * i;
    for (int c = 0; c < 9; ++c) count[c] += p[0] == kColors[c][0] && p[1] == kColors[c][1] && p[2] == kColors[c][2];
  }
  stbi_image_free(px);
  int drawn = 0;
  for (int c = 0; c < 9; ++c) {
    std::printf("series colour %d: %ld px\n", c, count[c]);
    drawn += count[c] >= kLinePixels;
  }
  const int want = std::atoi(argv[2]);
  std::printf("series drawn: %d (want %d)\n", drawn, want);
  if (drawn < want) std::fprintf(stderr, "png_check_algo_chart: the series' lines are not drawn\n");
  return drawn >= want ? 0 : 1;
}
