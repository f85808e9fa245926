#include "labs/train/text_corpus.h"

#include <string>

#include "core/error.h"
#include "labs/train/splitmix.h"

namespace dtl {

namespace corpus_data {  // generated at configure time (text_corpus_data.cpp in the build tree)
extern const unsigned char kText[];
extern const std::size_t kTextBytes;
extern const char kSources[];
}  // namespace corpus_data

std::string_view shipped_text() { return {reinterpret_cast<const char*>(corpus_data::kText), corpus_data::kTextBytes}; }

std::string_view shipped_text_sources() { return corpus_data::kSources; }

TextCorpus::TextCorpus(std::string_view text, Vocab vocab) : vocab_(vocab), id_of_byte_(256, -1) {
  bool present[256] = {};
  for (char c : text) present[static_cast<unsigned char>(c)] = true;
  for (int b = 0; b < 256; ++b) {
    if (vocab == Vocab::bytes || present[b]) {
      id_of_byte_[std::size_t(b)] = std::int32_t(byte_of_id_.size());
      byte_of_id_.push_back(static_cast<unsigned char>(b));
    }
  }
  // chars: round up so vocab-parallel layers divide V over 2, 4 or 8 ranks.
  vocab_size_ = vocab == Vocab::bytes ? 256 : (int(byte_of_id_.size()) + 7) / 8 * 8;
  tokens_ = encode(text);
}

int TextCorpus::symbols_used() const {
  if (vocab_ == Vocab::chars) return int(byte_of_id_.size());
  bool present[256] = {};
  for (std::int32_t t : tokens_) present[t] = true;
  int n = 0;
  for (bool p : present) n += p;
  return n;
}

std::vector<std::int32_t> TextCorpus::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  out.reserve(text.size());
  for (char c : text) {
    const std::int32_t id = id_of_byte_[static_cast<unsigned char>(c)];
    if (id < 0)
      throw UsageError("byte " + std::to_string(int(static_cast<unsigned char>(c))) +
                       " is not in this corpus's chars vocabulary; use the bytes vocabulary for arbitrary text");
    out.push_back(id);
  }
  return out;
}

std::string TextCorpus::decode(const std::vector<std::int32_t>& tokens) const {
  std::string out;
  out.reserve(tokens.size());
  for (std::int32_t t : tokens) {
    if (t < 0 || std::size_t(t) >= byte_of_id_.size())
      throw UsageError("token " + std::to_string(t) + " is not a symbol of this vocabulary (" +
                       std::to_string(byte_of_id_.size()) + " symbols, ids " + std::to_string(byte_of_id_.size()) +
                       ".." + std::to_string(vocab_size_ - 1) + " are padding)");
    out.push_back(static_cast<char>(byte_of_id_[std::size_t(t)]));
  }
  return out;
}

std::size_t TextCorpus::split_begin(Split split) const {
  return split == Split::train ? 0 : tokens_.size() - tokens_.size() / 10;
}

std::size_t TextCorpus::split_end(Split split) const {
  return split == Split::train ? split_begin(Split::held_out) : tokens_.size();
}

TokenBatch TextCorpus::batch(Split split, std::uint64_t step, int batch_size, int seq_len, std::uint64_t seed,
                             BatchShard shard) const {
  if (batch_size <= 0 || seq_len <= 0)
    throw UsageError("a text batch needs B > 0 and S > 0 (got B " + std::to_string(batch_size) + ", S " +
                     std::to_string(seq_len) + ")");
  if (shard.ranks <= 0 || shard.rank < 0 || shard.rank >= shard.ranks)
    throw UsageError("shard rank " + std::to_string(shard.rank) + " of " + std::to_string(shard.ranks) + " is invalid");
  const std::size_t begin = split_begin(split), end = split_end(split);
  if (end - begin < std::size_t(seq_len) + 1)
    throw UsageError("the " + std::string(split == Split::train ? "train" : "held-out") + " split has " +
                     std::to_string(end - begin) + " tokens, fewer than S+1 = " + std::to_string(seq_len + 1));
  const std::size_t choices = end - begin - std::size_t(seq_len);  // window starts that keep S+1 tokens inside
  TokenBatch out;
  out.seq = seq_len;
  out.batch = batch_size;
  out.tokens.resize(std::size_t(seq_len) * std::size_t(batch_size));
  out.targets.resize(out.tokens.size());
  for (int b = 0; b < batch_size; ++b) {
    const std::uint64_t column = std::uint64_t(shard.rank) * std::uint64_t(batch_size) + std::uint64_t(b);
    const std::uint64_t draw = splitmix64(splitmix64(splitmix64(seed) ^ step) ^ column);
    const std::size_t start = begin + std::size_t(draw % choices);
    out.starts.push_back(start);
    for (int s = 0; s < seq_len; ++s) {
      out.tokens[std::size_t(s) * std::size_t(batch_size) + std::size_t(b)] = tokens_[start + std::size_t(s)];
      out.targets[std::size_t(s) * std::size_t(batch_size) + std::size_t(b)] = tokens_[start + std::size_t(s) + 1];
    }
  }
  return out;
}

}  // namespace dtl
