// png_check_split IMAGE: a screenshot of dtlab-viz --view split on the tensor-parallel lab's
// GPT trace with T = 2, stepped onto a collective inside a block. Every split matrix is cut
// evenly, so rank 0's color and rank 1's (rank_color in viz/app/style.cpp) cover about the
// same area; the replicated LayerNorm weights are grey; the moving f or g is lit yellow.
#include <stb/stb_image.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_check_split IMAGE\n");
    return 2;
  }
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
  if (!px) {
    std::fprintf(stderr, "png_check_split: cannot read %s\n", argv[1]);
    return 1;
  }
  long rank0 = 0, rank1 = 0, lit = 0;
  for (long i = 0; i < long(w) * h; ++i) {
    const unsigned char* p = px + 3 * i;
    rank0 += p[0] == 78 && p[1] == 121 && p[2] == 167;
    rank1 += p[0] == 242 && p[1] == 142 && p[2] == 43;
    lit += p[0] == 255 && p[1] == 220 && p[2] == 60;
  }
  stbi_image_free(px);
  std::printf("rank 0: %ld px, rank 1: %ld px, lit marker: %ld px\n", rank0, rank1, lit);
  const bool even = rank0 > 2000 && rank1 > 2000 && rank0 * 5 > rank1 * 4 && rank1 * 5 > rank0 * 4;
  if (!even) std::fprintf(stderr, "png_check_split: the two ranks' slices should cover about the same area\n");
  if (lit < 100) std::fprintf(stderr, "png_check_split: no f or g marker is lit\n");
  return even && lit >= 100 ? 0 : 1;
}
