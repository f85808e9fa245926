// ContentStamp: size and a 64-bit hash of a file's bytes. A .dtlt companion stores the
// stamp of the JSON it was written beside, so the visualizer uses it only while the JSON
// is byte for byte the one it came from; timestamps say nothing when a file is edited
// within the same second, copied, or restored from an archive.
//
// The hash is XXH64-shaped (four lanes of multiply-rotate over 32-byte stripes, then an
// avalanche): a few GB/s, so checking a 1 GB trace costs about what reading it costs. It
// detects edits, not attacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dtl {

struct ContentStamp {
  std::uint64_t size = 0;
  std::uint64_t hash = 0;
  bool operator==(const ContentStamp&) const = default;
};

// Streaming: any split of the same bytes gives the same stamp.
class ContentHasher {
 public:
  ContentHasher();
  void update(const void* data, std::size_t n);
  ContentStamp finish() const;

 private:
  void stripe(const unsigned char* p);
  std::uint64_t acc_[4];
  unsigned char buf_[32];
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;
};

ContentStamp stamp_of(std::string_view bytes);
// Reads the file in blocks (memory stays small); throws dtl::Error when it cannot be read.
ContentStamp stamp_of_file(const std::string& path);

}  // namespace dtl
