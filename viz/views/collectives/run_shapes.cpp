// Where the collectives view puts each rank: the shape of the algorithm of the run at the
// cursor (ring_view.h). Plain geometry, tested without a window.
#include <algorithm>
#include <bit>
#include <cmath>

#include "viz/views/collectives/ring_view.h"

namespace dtl::viz {

RunShape shape_of(const Role& run_role) {
  switch (run_role.algorithm) {
    case AlgorithmKind::naive: return RunShape::star;
    case AlgorithmKind::tree: return RunShape::tree;
    case AlgorithmKind::rhd: return RunShape::pairs;
    default: return RunShape::ring;  // ring, a check built from the ring, or unknown
  }
}

namespace {

// P ranks on an ellipse filling the box, rank 0 at the top, clockwise.
std::vector<Vec2> on_ellipse(int P, float x0, float y0, float w, float h) {
  const Vec2 center{x0 + w / 2, y0 + h / 2};
  std::vector<Vec2> p = ring_positions(P, center, 1.0f);
  for (Vec2& v : p) v = {center.x + (v.x - center.x) * w / 2, center.y + (v.y - center.y) * h / 2};
  return p;
}

// Binomial tree rooted at rank 0 (the lab's tree_broadcast / tree_all_reduce): rank r's
// parent is r less its highest set bit, so its depth is popcount(r). One row per depth,
// the ranks of a row spread across the width in rank order.
std::vector<Vec2> binomial_levels(int P, float x0, float y0, float w, float h) {
  const auto depth = [](int r) { return std::popcount(unsigned(r)); };
  int levels = 1;
  for (int r = 0; r < P; ++r) levels = std::max(levels, depth(r) + 1);
  std::vector<int> in_level(std::size_t(levels), 0), index(std::size_t(P), 0);
  for (int r = 0; r < P; ++r) index[std::size_t(r)] = in_level[std::size_t(depth(r))]++;
  std::vector<Vec2> p(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) {
    const int d = depth(r), n = in_level[std::size_t(d)];
    p[std::size_t(r)] = {x0 + w * (float(index[std::size_t(r)]) + 0.5f) / float(n),
                         y0 + h * (float(d) + 0.5f) / float(levels)};
  }
  return p;
}

}  // namespace

std::vector<Vec2> shape_positions(RunShape shape, int P, float x0, float y0, float w, float h) {
  if (P <= 0) return {};
  switch (shape) {
    case RunShape::star: {  // rank 0 in the middle, every other rank around it
      std::vector<Vec2> p(static_cast<std::size_t>(P));
      p[0] = {x0 + w / 2, y0 + h / 2};
      const std::vector<Vec2> around = on_ellipse(P - 1, x0, y0, w, h);
      std::copy(around.begin(), around.end(), p.begin() + 1);
      return p;
    }
    case RunShape::tree: return binomial_levels(P, x0, y0, w, h);
    case RunShape::ring:
    case RunShape::pairs: break;  // halving-doubling: a circle, its round's pairs drawn as chords
  }
  return on_ellipse(P, x0, y0, w, h);
}

}  // namespace dtl::viz
