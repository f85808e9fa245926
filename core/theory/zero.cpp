#include "core/theory/zero.h"

#include <string>

#include "core/error.h"

namespace dtl::theory {

ZeroPrecision zero_precision(ZeroConvention c) {
  // 16-bit params and grads in every convention; what the optimizer keeps differs.
  return {2, 2, c == ZeroConvention::sixteen ? 12.0 : c == ZeroConvention::twelve ? 8.0 : 4.0};
}

const char* zero_convention_name(ZeroConvention c) {
  switch (c) {
    case ZeroConvention::sixteen: return "16 B/param (2+2+12)";
    case ZeroConvention::twelve: return "12 B/param (2+2+8)";
    case ZeroConvention::eight: return "8 B/param (2+2+4)";
  }
  return "?";
}

ZeroBytes zero_bytes_per_param(int stage, int N, ZeroConvention c) {
  return zero_bytes_per_param(stage, N, zero_precision(c));
}

ZeroBytes zero_bytes_per_param(int stage, int N, ZeroPrecision p) {
  if (stage < 0 || stage > 3) throw UsageError("ZeRO has stages 0 (plain DDP) to 3, not " + std::to_string(stage));
  if (N < 1) throw UsageError("ZeRO shards over at least 1 rank, not " + std::to_string(N));
  ZeroBytes b{p.param, p.grad, p.optimizer};
  if (stage >= 1) b.optimizer /= N;  // ZeRO-1: optimizer state sharded
  if (stage >= 2) b.grads /= N;      // ZeRO-2: gradients too
  if (stage >= 3) b.params /= N;     // ZeRO-3: parameters too
  return b;
}

double zero_model_state_bytes(double psi, int stage, int N, ZeroConvention c) {
  return psi * zero_bytes_per_param(stage, N, c).total();
}

double zero_comm_elements_per_rank(double psi, int stage, int N) {
  zero_bytes_per_param(stage, N, ZeroConvention::sixteen);  // validates
  const double per_collective = psi * double(N - 1) / double(N);
  return (stage == 3 ? 3.0 : 2.0) * per_collective;
}

}  // namespace dtl::theory
