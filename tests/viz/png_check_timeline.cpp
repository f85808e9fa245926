// png_check_timeline IMAGE MIN KIND...: a screenshot of dtlab-viz TRACE --view timeline
// draws each KIND (forward, backward, send, recv, collective) in at least MIN pixels of its
// colour below the legend (the top 8 % of the window, whose swatches hold a few dozen),
// so a timeline whose phases swallow their sends and receives, or that draws no F/B
// blocks, fails (issue 47: the nested slice stack).
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Kind {
  const char* name;
  unsigned char r, g, b;  // TimelineView's colours (timeline_view.cpp) and kind_color (style.cpp)
};
constexpr Kind kKinds[] = {{"forward", 110, 195, 105},
                           {"backward", 40, 125, 80},
                           {"send", 60, 120, 220},
                           {"recv", 240, 150, 40},
                           {"collective", 150, 90, 200}};

const Kind* find_kind(const char* name) {
  for (const Kind& k : kKinds)
    if (std::strcmp(k.name, name) == 0) return &k;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: png_check_timeline IMAGE MIN KIND... (forward, backward, send, recv, collective)\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_timeline: cannot read %s\n", argv[1]);
    return 1;
  }
  const long min = std::strtol(argv[2], nullptr, 10);
  bool ok = true;
  for (int a = 3; a < argc; ++a) {
    const Kind* k = find_kind(argv[a]);
    if (!k) {
      std::fprintf(stderr, "png_check_timeline: unknown kind '%s'\n", argv[a]);
      stbi_image_free(px);
      return 2;
    }
    long count = 0;
    for (int y = h * 8 / 100; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const unsigned char* p = px + 3 * (y * w + x);
        count += p[0] == k->r && p[1] == k->g && p[2] == k->b;
      }
    std::printf("png_check_timeline: %s: %ld pixels of %s (at least %ld)\n", argv[1], count, k->name, min);
    if (count < min) std::fprintf(stderr, "png_check_timeline: the %s spans are not drawn\n", k->name), ok = false;
  }
  stbi_image_free(px);
  return ok ? 0 : 1;
}
