// png_check_ddp IMAGE: a screenshot of dtlab-viz --lab ddp (the whole window) shows what
// issue 13 asks for. Timeline (the top band): bucket all-reduces overlapping backward, that
// is pixel columns where a backward span (rank lane) and a collective (comm lane) are both
// drawn. Memory view (the bottom band): stacked bars and the formula's yellow line across.
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Image {
  int w = 0, h = 0;
  unsigned char* px = nullptr;
  const unsigned char* at(int x, int y) const { return px + 3 * (y * w + x); }
  bool is(int x, int y, int r, int g, int b) const {
    const unsigned char* p = at(x, y);
    return p[0] == r && p[1] == g && p[2] == b;
  }
};

// Columns of the top band where both a backward span and a collective are drawn.
int overlap_columns(const Image& im) {
  int columns = 0;
  for (int x = 0; x < im.w; ++x) {
    bool backward = false, collective = false;
    for (int y = 0; y < im.h * 55 / 100; ++y) {
      backward = backward || im.is(x, y, 40, 125, 80);       // TimelineView's backward
      collective = collective || im.is(x, y, 150, 90, 200);  // kind_color(collective)
    }
    columns += backward && collective;
  }
  return columns;
}

// The longest horizontal run of yellow (the formula's line) in the bottom band.
int longest_yellow_run(const Image& im) {
  int best = 0;
  for (int y = im.h * 55 / 100; y < im.h; ++y)
    for (int x = 0, run = 0; x < im.w; ++x) {
      const unsigned char* p = im.at(x, y);
      run = p[0] > 200 && p[1] > 170 && p[2] < 120 ? run + 1 : 0;
      if (run > best) best = run;
    }
  return best;
}

int count_color(const Image& im, int y0, int r, int g, int b) {
  int n = 0;
  for (int y = y0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x) n += im.is(x, y, r, g, b);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_ddp IMAGE\n");
    return 2;
  }
  Image im;
  int n = 0;
  im.px = stbi_load(argv[1], &im.w, &im.h, &n, 3);
  if (!im.px) {
    std::fprintf(stderr, "png_check_ddp: cannot read %s\n", argv[1]);
    return 1;
  }
  const int overlap = overlap_columns(im), yellow = longest_yellow_run(im);
  const int params = count_color(im, im.h * 55 / 100, 60, 120, 220);  // tag_color(param)
  stbi_image_free(im.px);
  std::printf("png_check_ddp: %dx%d, %d columns of backward over an all-reduce, formula line %d px, %d param-bar px\n",
              im.w, im.h, overlap, yellow, params);
  if (overlap < 10) std::fprintf(stderr, "png_check_ddp: no bucket all-reduce overlaps backward on the timeline\n");
  if (yellow < 100) std::fprintf(stderr, "png_check_ddp: the memory view has no formula line\n");
  if (params < 500) std::fprintf(stderr, "png_check_ddp: the memory view has no parameter bars\n");
  return overlap >= 10 && yellow >= 100 && params >= 500 ? 0 : 1;
}
