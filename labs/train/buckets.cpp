#include "labs/train/buckets.h"

namespace dtl {

std::vector<ex::GradBucket> layer_buckets(const ParamLayout& layout, double capacity_mb, DType t) {
  std::vector<std::size_t> elements;
  for (int l = layout.first_layer(); l <= layout.last_layer(); ++l) elements.push_back(layout.layer_range(l).size());
  return ex::assign_buckets(elements, std::size_t(capacity_mb * (1 << 20) / double(dtype_size(t))));
}

}  // namespace dtl
