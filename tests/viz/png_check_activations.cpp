// png_check_activations IMAGE: a screenshot of dtlab-viz --view activations on a gpt lab
// trace with --recompute full, the cursor in a training step, 1400 × 800. The curve (the
// tracker's activation bytes) is drawn, reaches the formula's peak line (its top within 3
// pixels of the orange dashes: the measured peak is the formula's) and rises above the
// kept line; the strip under it shows forward and recomputation spans (the view's colors:
// viz/views/gpt/activation_view.cpp).
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>

namespace {
bool is(const unsigned char* p, int r, int g, int b) { return p[0] == r && p[1] == g && p[2] == b; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_activations IMAGE\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_activations: cannot read %s\n", argv[1]);
    return 1;
  }
  long curve = 0, forward = 0, recompute = 0;
  int curve_top = h, peak_y = -1, kept_y = -1;
  for (int y = h * 20 / 100; y < h; ++y)  // below the header and its legend
    for (int x = 100; x < w; ++x) {
      const unsigned char* p = px + 3 * (long(y) * w + x);
      if (is(p, 120, 190, 255)) ++curve, curve_top = y < curve_top ? y : curve_top;
      if (is(p, 110, 195, 105)) ++forward;
      if (is(p, 150, 110, 200)) ++recompute;
      if (is(p, 255, 150, 60) && peak_y < 0) peak_y = y;
      if (is(p, 255, 214, 64) && kept_y < 0) kept_y = y;
    }
  stbi_image_free(px);
  std::printf("curve %ld px (top y %d), peak line y %d, kept line y %d; forward %ld px, recompute %ld px\n", curve,
              curve_top, peak_y, kept_y, forward, recompute);
  const bool drawn = curve >= 1000 && peak_y >= 0 && kept_y > peak_y;
  const bool at_peak = drawn && std::abs(curve_top - peak_y) <= 3;
  const bool passes = forward >= 500 && recompute >= 500;
  if (!drawn) std::fprintf(stderr, "png_check_activations: the curve, the peak line or the kept line is missing\n");
  if (drawn && !at_peak)
    std::fprintf(stderr, "png_check_activations: the measured peak is not on the formula's line\n");
  if (!passes) std::fprintf(stderr, "png_check_activations: the forward or recomputation spans are missing\n");
  return at_peak && passes ? 0 : 1;
}
