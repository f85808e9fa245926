// png_check IMAGE RANKS: the screenshot is not blank, and the ring view drew one node per
// rank. A rank's node is a dark rounded box holding its chunk cells; we count them by
// finding the "rank label" rows of the ring panel: connected blobs of the node frame
// color (40, 42, 48) in the left half of the image.
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: png_check IMAGE RANKS\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check: cannot read %s\n", argv[1]);
    return 1;
  }
  const int ranks = std::atoi(argv[2]);
  // 1. Not blank: many distinct colors.
  std::vector<bool> seen(1 << 15, false);
  int distinct = 0;
  for (int i = 0; i < w * h; ++i) {
    const unsigned char* p = px + 3 * i;
    const int key = (p[0] >> 3) << 10 | (p[1] >> 3) << 5 | (p[2] >> 3);
    if (!seen[std::size_t(key)]) {
      seen[std::size_t(key)] = true;
      ++distinct;
    }
  }
  // 2. Ring nodes: blobs of the node frame color in the ring panel (left half, top 60%).
  std::vector<int> label(std::size_t(w * h), 0);
  auto is_frame = [&](int x, int y) {
    const unsigned char* p = px + 3 * (y * w + x);
    return p[0] == 40 && p[1] == 42 && p[2] == 48;
  };
  int blobs = 0;
  std::vector<int> stack;
  for (int y = 0; y < h * 6 / 10; ++y)
    for (int x = 0; x < w / 2; ++x) {
      if (!is_frame(x, y) || label[std::size_t(y * w + x)]) continue;
      int size = 0;
      stack.push_back(y * w + x);
      label[std::size_t(y * w + x)] = 1;
      while (!stack.empty()) {
        const int i = stack.back();
        stack.pop_back();
        ++size;
        const int cx = i % w, cy = i / w;
        const int nb[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
        for (auto& d : nb) {
          const int nx = cx + d[0], ny = cy + d[1];
          if (nx < 0 || ny < 0 || nx >= w / 2 || ny >= h * 6 / 10 || label[std::size_t(ny * w + nx)] ||
              !is_frame(nx, ny))
            continue;
          label[std::size_t(ny * w + nx)] = 1;
          stack.push_back(ny * w + nx);
        }
      }
      if (size >= 20) ++blobs;  // ignore stray pixels
    }
  stbi_image_free(px);
  std::printf("png_check: %dx%d, %d distinct colors, %d ring nodes (expected %d)\n", w, h, distinct, blobs, ranks);
  if (distinct < 20) {
    std::fprintf(stderr, "png_check: the image looks blank\n");
    return 1;
  }
  if (blobs != ranks) {
    std::fprintf(stderr, "png_check: the ring view should draw %d nodes, found %d\n", ranks, blobs);
    return 1;
  }
  return 0;
}
