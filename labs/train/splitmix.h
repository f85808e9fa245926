// SplitMix64's finalizer (Steele, Lea and Flood 2014): a counter-based generator, so a
// draw needs no state and no other draw before it: a rank computes its own slice of a
// tensor, and a data window (step, column) starts without the windows before it.
#pragma once

#include <cstdint>

namespace dtl {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace dtl
