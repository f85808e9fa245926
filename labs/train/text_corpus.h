// A language-modelling corpus with no download: the text dtlab ships (README.md and
// docs/*.md), embedded into the binary at configure time (labs/train/embed_text.cmake), so
// the GPT lab trains on the same bytes wherever it runs.
//
// Tokens are bytes. Two vocabularies:
//   bytes — token = byte value, V = 256;
//   chars — the distinct bytes of the text, in byte order, as 0..U-1; V is U rounded up to
//           a multiple of 8, so a tensor-parallel run on 2, 4 or 8 ranks splits the
//           embedding and the LM head evenly. Ids U..V-1 never occur in the data.
//
// Batches are drawn, not iterated: batch(split, step, B, S, seed) takes B windows of S+1
// consecutive tokens whose starts hash from (seed, step, column), so any rank computes any
// step's batch without state:
//   tensor parallel — every rank calls with the same arguments and gets the same batch;
//   data parallel   — rank r of P passes BatchShard{r, P}: the P ranks together draw B·P windows
//                     and rank r keeps columns r·B .. r·B+B-1 (disjoint samples; together
//                     exactly the batch of one rank with B·P and BatchShard{0, 1}).
// The held-out split is the last 10% of the tokens; no window of one split reads a token
// (input or target) of the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {

// The embedded text, and which files it came from ("README.md, docs/checkpoints.md, ...").
std::string_view shipped_text();
std::string_view shipped_text_sources();

enum class Vocab { bytes, chars };
enum class Split { train, held_out };

// Which part of a data-parallel batch this rank draws: rank `rank` of `ranks`.
struct BatchShard {
  int rank = 0, ranks = 1;
};

// Tokens laid out [S][B] (row s·B + b), as the GPT takes them.
struct TokenBatch {
  int seq = 0, batch = 0;
  std::vector<std::int32_t> tokens;   // [S][B]
  std::vector<std::int32_t> targets;  // [S][B]: the token after tokens[s][b] in the text
  std::vector<std::size_t> starts;    // [B]: where column b's window starts in tokens()
  std::int32_t token(int s, int b) const { return tokens[std::size_t(s) * std::size_t(batch) + std::size_t(b)]; }
  std::int32_t target(int s, int b) const { return targets[std::size_t(s) * std::size_t(batch) + std::size_t(b)]; }
};

class TextCorpus {
 public:
  TextCorpus(std::string_view text, Vocab vocab);
  static TextCorpus shipped(Vocab vocab = Vocab::bytes) { return TextCorpus(shipped_text(), vocab); }

  Vocab vocab() const { return vocab_; }
  int vocab_size() const { return vocab_size_; }  // 256, or distinct bytes rounded up to 8
  int symbols_used() const;                       // distinct bytes in the text

  // Text ↔ tokens; UsageError for a byte the chars vocabulary lacks or an unused id.
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<std::int32_t>& tokens) const;

  const std::vector<std::int32_t>& tokens() const { return tokens_; }  // the whole text
  // The split's token range [begin, end) in tokens(): train is the first 90%.
  std::size_t split_begin(Split split) const;
  std::size_t split_end(Split split) const;

  // Batch `step` of `split` (see the top of this file); UsageError when B or S is not
  // positive, the shard is invalid, or the split is shorter than S+1 tokens.
  TokenBatch batch(Split split, std::uint64_t step, int batch_size, int seq_len, std::uint64_t seed,
                   BatchShard shard = {}) const;

 private:
  Vocab vocab_;
  int vocab_size_ = 256;
  std::vector<std::int32_t> id_of_byte_;   // [256], -1 when the byte is not in the vocabulary
  std::vector<unsigned char> byte_of_id_;  // [symbols used]
  std::vector<std::int32_t> tokens_;
};

}  // namespace dtl
