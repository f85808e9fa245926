// The parameter layout of a model: a table of named tensors per layer (weight, bias, ...)
// laid out back to back in one flat buffer per role (parameters, gradients, optimizer
// state), the idea of llm.c's ParameterTensors. Every parallelism is then index math on
// that buffer instead of a second copy of the model:
//
//   DDP bucket        a range of whole layers (in reverse order)
//   ZeRO shard        shard(rank, world): one contiguous range per rank
//   pipeline stage    layers_range(first, last)
//
// Sharding convention (DeepSpeed's and PyTorch FSDP's flat-parameter padding): a buffer of
// n elements is padded to world·chunk elements with chunk = ceil(n / world), and rank r
// owns [r·chunk, (r+1)·chunk) clipped to n. Every rank's chunk has the same size, so a
// reduce-scatter or all-gather moves equal pieces; the padding (world·chunk − n elements,
// at most world − 1) sits at the end, on the last ranks, and is counted, never hidden.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {

// Elements [begin, end) of a flat buffer.
struct Range {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool operator==(const Range&) const = default;
};
Range intersect(Range a, Range b);

// One rank's piece of a flat buffer of n elements (see the convention above).
struct Shard {
  Range range;              // what this rank owns, clipped to the buffer (may be empty)
  std::size_t chunk = 0;    // ceil(n / world): the size every rank's piece is padded to
  std::size_t padding = 0;  // world·chunk − n: padding elements over all ranks
  int world = 1;
  std::size_t padded_numel() const { return chunk * std::size_t(world); }
  // This rank's padding: the elements of its chunk past the end of the buffer.
  std::size_t own_padding() const { return chunk - range.size(); }
};
// Throws UsageError if world < 1 or rank is outside [0, world).
Shard shard_of(std::size_t n, int rank, int world);

struct ParamTensor {
  std::string name;                 // "weight", "bias", ...
  int layer = 0;                    // the model's layer number (a stage keeps the global number)
  std::vector<std::int64_t> shape;  // e.g. {out, in} for a linear weight, as nn.Linear
  Range range;                      // its elements in the flat buffer
};

class ParamLayout {
 public:
  // Appends a tensor to `layer`. Layers must be added in increasing order and a layer's
  // tensors one after another, so each layer is one contiguous range.
  const ParamTensor& add(int layer, std::string name, std::vector<std::int64_t> shape);

  std::size_t numel() const { return numel_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  int first_layer() const;  // the layers this layout holds (a pipeline stage: a sub-range)
  int last_layer() const;
  const ParamTensor& tensor(int layer, std::string_view name) const;  // Error if absent
  Range layer_range(int layer) const;
  Range layers_range(int first, int last) const;  // layers first..last, inclusive
  Shard shard(int rank, int world) const { return shard_of(numel_, rank, world); }
  // The tensors a range overlaps, each clipped to it: what a shard or bucket holds, in words.
  std::vector<ParamTensor> tensors_in(Range r) const;

 private:
  std::vector<ParamTensor> tensors_;
  std::size_t numel_ = 0;
};

}  // namespace dtl
