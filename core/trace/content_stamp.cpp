#include "core/trace/content_stamp.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace dtl {

namespace {

// The primes of XXH64: odd, with well-spread bits, so multiplication mixes every input bit.
constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull,
                        kP4 = 0x85EBCA77C2B2AE63ull, kP5 = 0x27D4EB2F165667C5ull;

std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;  // host order: stamps are compared on the machine that wrote them or a twin
}

std::uint64_t round(std::uint64_t acc, std::uint64_t input) { return std::rotl(acc + input * kP2, 31) * kP1; }

}  // namespace

ContentHasher::ContentHasher() : acc_{kP1 + kP2, kP2, 0, 0 - kP1}, buf_{} {}

void ContentHasher::stripe(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(p + 8 * i));
}

void ContentHasher::update(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += n;
  if (buffered_) {  // complete the stripe a previous call started
    const std::size_t take = std::min(n, sizeof buf_ - buffered_);
    std::memcpy(buf_ + buffered_, p, take);
    buffered_ += take, p += take, n -= take;
    if (buffered_ < sizeof buf_) return;
    stripe(buf_);
    buffered_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) stripe(p);
  std::memcpy(buf_, p, n);
  buffered_ = n;
}

ContentStamp ContentHasher::finish() const {
  std::uint64_t h = std::rotl(acc_[0], 1) + std::rotl(acc_[1], 7) + std::rotl(acc_[2], 12) + std::rotl(acc_[3], 18);
  for (std::uint64_t a : acc_) h = (h ^ round(0, a)) * kP1 + kP4;
  h += total_;
  std::size_t i = 0;
  for (; i + 8 <= buffered_; i += 8) h = std::rotl(h ^ round(0, load64(buf_ + i)), 27) * kP1 + kP4;
  for (; i < buffered_; ++i) h = std::rotl(h ^ (buf_[i] * kP5), 11) * kP1;
  h ^= h >> 33;  // avalanche: every input bit reaches every output bit
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return {total_, h};
}

ContentStamp stamp_of(std::string_view bytes) {
  ContentHasher h;
  h.update(bytes.data(), bytes.size());
  return h.finish();
}

ContentStamp stamp_of_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error("cannot open '" + path + "'; check the path");
  std::vector<char> block(std::size_t(1) << 20);
  ContentHasher h;
  std::size_t n;
  while ((n = std::fread(block.data(), 1, block.size(), f.get())) > 0) h.update(block.data(), n);
  if (std::ferror(f.get())) throw Error("reading '" + path + "' failed");
  return h.finish();
}

}  // namespace dtl
