// png_check_what_if IMAGE ROWS: a screenshot of dtlab-viz --view what-if. Each row the view
// predicts draws a bar in the predicted colour (kPredictedColor, viz/app/what_if_view.cpp)
// at least a few pixels long; fewer bar pixels than ROWS short bars: rows not drawn.
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: png_check_what_if IMAGE ROWS\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_what_if: cannot read %s\n", argv[1]);
    return 1;
  }
  long bar = 0;
  for (long i = 0; i < long(w) * h; ++i) {
    const unsigned char* p = px + 3 * i;
    bar += p[0] == 90 && p[1] == 200 && p[2] == 210;
  }
  stbi_image_free(px);
  const long rows = std::atol(argv[2]), least = rows * 4 * 8;  // a bar: at least 4 px long, 8 px high
  std::printf("predicted bars: %ld px (at least %ld for %ld rows)\n", bar, least, rows);
  if (bar < least) std::fprintf(stderr, "png_check_what_if: the predicted rows' bars are not drawn\n");
  return bar >= least ? 0 : 1;
}
