// png_check_compare IMAGE: a screenshot of dtlab-viz A B --compare (1600x1000) draws both
// runs' timelines: the band of run A (the top third) and the band of run B (the next third)
// each hold spans in the timeline's colours (forward, backward, optimizer, other compute,
// collective), beyond what the two legends' swatches hold. Fails when either is not drawn.
#include <stb/stb_image.h>

#include <cstdio>

namespace {

// The span colours of TimelineView (timeline_view.cpp) and kind_color (style.cpp).
constexpr unsigned char kSpanColors[][3] = {
    {110, 195, 105}, {40, 125, 80}, {190, 170, 60}, {120, 138, 158}, {150, 90, 200}};

int span_pixels(const unsigned char* px, int w, int y0, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < w; ++x) {
      const unsigned char* p = px + 3 * (y * w + x);
      for (const auto& c : kSpanColors) n += p[0] == c[0] && p[1] == c[1] && p[2] == c[2];
    }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_compare IMAGE\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_compare: cannot read %s\n", argv[1]);
    return 1;
  }
  // The compare window: a line of text, then A's timeline and B's, each 36 % of the rest.
  const int a = span_pixels(px, w, h * 3 / 100, h * 37 / 100), b = span_pixels(px, w, h * 40 / 100, h * 72 / 100);
  stbi_image_free(px);
  constexpr int kLegend = 2 * 12 * 12 * 5;  // generously: five swatches of a legend, twice over
  std::printf("png_check_compare: %dx%d, span pixels: run A %d, run B %d (a legend holds under %d)\n", w, h, a, b,
              kLegend);
  if (a <= 4 * kLegend) std::fprintf(stderr, "png_check_compare: run A's timeline is not drawn\n");
  if (b <= 4 * kLegend) std::fprintf(stderr, "png_check_compare: run B's timeline is not drawn\n");
  return a > 4 * kLegend && b > 4 * kLegend ? 0 : 1;
}
