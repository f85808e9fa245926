// The embedded text corpus: the shipped text round-trips through both vocabularies, targets
// are the next token, batches depend only on their arguments, shards tile a batch, and the
// train and held-out splits never share a token.
#include "labs/train/text_corpus.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"

using namespace dtl;

TEST(TextCorpus, ShipsTheReadmeAndDocs) {
  EXPECT_GT(shipped_text().size(), 10000u);
  EXPECT_EQ(shipped_text().substr(0, 7), "# dtlab");  // README.md comes first
  EXPECT_NE(std::string(shipped_text_sources()).find("docs/"), std::string::npos) << shipped_text_sources();
}

TEST(TextCorpus, TokensRoundTripToTheText) {
  for (Vocab v : {Vocab::bytes, Vocab::chars}) {
    const TextCorpus c = TextCorpus::shipped(v);
    EXPECT_EQ(c.tokens().size(), shipped_text().size());
    EXPECT_EQ(c.decode(c.tokens()), shipped_text());
    for (std::int32_t t : c.tokens()) ASSERT_TRUE(t >= 0 && t < c.vocab_size());
  }
}

TEST(TextCorpus, CharsVocabularyIsTheDistinctBytesRoundedUpToEight) {
  const TextCorpus c("hello, world", Vocab::chars);  // 9 distinct: ' ' ',' d e h l o r w
  EXPECT_EQ(c.symbols_used(), 9);
  EXPECT_EQ(c.vocab_size(), 16);
  EXPECT_EQ(c.encode(" ,dehlorw"), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(c.encode("x"), UsageError);  // not in the text
  EXPECT_THROW(c.decode({9}), UsageError);  // a padding id
  const TextCorpus shipped = TextCorpus::shipped(Vocab::chars);
  EXPECT_EQ(shipped.vocab_size() % 8, 0);
  EXPECT_GE(shipped.vocab_size(), shipped.symbols_used());
  EXPECT_LT(shipped.vocab_size(), shipped.symbols_used() + 8);
  EXPECT_EQ(TextCorpus::shipped(Vocab::bytes).vocab_size(), 256);
}

TEST(TextCorpus, TargetsAreTheTokensShiftedByOne) {
  const TextCorpus c = TextCorpus::shipped();
  const TokenBatch b = c.batch(Split::train, 3, 5, 17, 42);
  ASSERT_EQ(b.tokens.size(), 5u * 17u);
  for (int col = 0; col < 5; ++col) {
    for (int s = 0; s < 17; ++s) {
      EXPECT_EQ(b.token(s, col), c.tokens()[b.starts[std::size_t(col)] + std::size_t(s)]);
      EXPECT_EQ(b.target(s, col), c.tokens()[b.starts[std::size_t(col)] + std::size_t(s) + 1]);
      if (s + 1 < 17) { EXPECT_EQ(b.target(s, col), b.token(s + 1, col)); }
    }
  }
}

TEST(TextCorpus, BatchesAreDeterministicAndShardsTileTheWholeBatch) {
  const TextCorpus c = TextCorpus::shipped(Vocab::chars);
  const TokenBatch a = c.batch(Split::train, 7, 4, 16, 1234);
  EXPECT_EQ(a.tokens, c.batch(Split::train, 7, 4, 16, 1234).tokens);  // same arguments, same batch
  EXPECT_NE(a.starts, c.batch(Split::train, 8, 4, 16, 1234).starts);  // the next step differs
  EXPECT_NE(a.starts, c.batch(Split::train, 7, 4, 16, 99).starts);    // so does another seed
  // Data parallel: ranks 0..2 of 3 with B=4 each are the 12 columns of one B=12 batch.
  const TokenBatch whole = c.batch(Split::train, 7, 12, 16, 1234);
  for (int r = 0; r < 3; ++r) {
    const TokenBatch part = c.batch(Split::train, 7, 4, 16, 1234, BatchShard{r, 3});
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(part.starts[std::size_t(b)], whole.starts[std::size_t(r * 4 + b)]);
      for (int s = 0; s < 16; ++s) EXPECT_EQ(part.token(s, b), whole.token(s, r * 4 + b));
    }
  }
  EXPECT_EQ(a.starts, c.batch(Split::train, 7, 4, 16, 1234, BatchShard{0, 3}).starts);  // rank 0 = the unsharded batch
  EXPECT_THROW(c.batch(Split::train, 0, 4, 16, 1, BatchShard{3, 3}), UsageError);
  EXPECT_THROW(c.batch(Split::train, 0, 0, 16, 1), UsageError);
  EXPECT_THROW(TextCorpus("short", Vocab::bytes).batch(Split::train, 0, 1, 8, 1), UsageError);
}

TEST(TextCorpus, TheHeldOutSplitIsTheLastTenthAndDisjoint) {
  const TextCorpus c = TextCorpus::shipped();
  const std::size_t n = c.tokens().size(), cut = c.split_begin(Split::held_out);
  EXPECT_EQ(c.split_end(Split::train), cut);
  EXPECT_EQ(n - cut, n / 10);
  const int S = 32;
  for (std::uint64_t step = 0; step < 200; ++step) {
    for (std::size_t start : c.batch(Split::train, step, 8, S, 5).starts) ASSERT_LE(start + S, cut - 1) << step;
    for (std::size_t start : c.batch(Split::held_out, step, 8, S, 5).starts) {
      ASSERT_GE(start, cut) << step;
      ASSERT_LE(start + S, n - 1) << step;
    }
  }
}
