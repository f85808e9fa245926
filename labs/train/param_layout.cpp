#include "labs/train/param_layout.h"

#include <algorithm>

#include "core/error.h"

namespace dtl {

Range intersect(Range a, Range b) {
  const std::size_t begin = std::max(a.begin, b.begin), end = std::min(a.end, b.end);
  return end > begin ? Range{begin, end} : Range{begin, begin};
}

Shard shard_of(std::size_t n, int rank, int world) {
  if (world < 1) throw UsageError("a buffer is sharded over at least 1 rank, not " + std::to_string(world));
  if (rank < 0 || rank >= world)
    throw UsageError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(world - 1));
  Shard s;
  s.world = world;
  s.chunk = (n + std::size_t(world) - 1) / std::size_t(world);
  s.padding = s.chunk * std::size_t(world) - n;
  const std::size_t begin = std::min(n, std::size_t(rank) * s.chunk);
  s.range = {begin, std::min(n, begin + s.chunk)};
  return s;
}

const ParamTensor& ParamLayout::add(int layer, std::string name, std::vector<std::int64_t> shape) {
  if (!tensors_.empty() && layer < tensors_.back().layer)
    throw Error("ParamLayout: layer " + std::to_string(layer) + " added after layer " +
                std::to_string(tensors_.back().layer) + " (layers go in increasing order)");
  std::size_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 1) throw UsageError("tensor '" + name + "' of layer " + std::to_string(layer) + " has a dimension < 1");
    count *= std::size_t(d);
  }
  tensors_.push_back({std::move(name), layer, std::move(shape), {numel_, numel_ + count}});
  numel_ += count;
  return tensors_.back();
}

int ParamLayout::first_layer() const { return tensors_.empty() ? 0 : tensors_.front().layer; }
int ParamLayout::last_layer() const { return tensors_.empty() ? -1 : tensors_.back().layer; }

const ParamTensor& ParamLayout::tensor(int layer, std::string_view name) const {
  for (const ParamTensor& t : tensors_)
    if (t.layer == layer && t.name == name) return t;
  throw Error("the layout has no tensor '" + std::string(name) + "' in layer " + std::to_string(layer));
}

Range ParamLayout::layer_range(int layer) const { return layers_range(layer, layer); }

Range ParamLayout::layers_range(int first, int last) const {
  Range r{numel_, 0};
  for (const ParamTensor& t : tensors_)
    if (t.layer >= first && t.layer <= last) r = {std::min(r.begin, t.range.begin), std::max(r.end, t.range.end)};
  if (r.empty())
    throw Error("the layout holds no layer in " + std::to_string(first) + ".." + std::to_string(last) + " (it holds " +
                std::to_string(first_layer()) + ".." + std::to_string(last_layer()) + ")");
  return r;
}

std::vector<ParamTensor> ParamLayout::tensors_in(Range r) const {
  std::vector<ParamTensor> out;
  for (const ParamTensor& t : tensors_) {
    const Range piece = intersect(t.range, r);
    if (piece.empty()) continue;
    ParamTensor clipped = t;
    clipped.range = piece;
    out.push_back(std::move(clipped));
  }
  return out;
}

}  // namespace dtl
