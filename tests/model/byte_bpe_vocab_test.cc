#include "model/byte_bpe_vocab.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

namespace orch::model {
namespace {

using ::testing::ElementsAre;

TEST(ByteBpeVocabTest, BytesUseGpt2sPrintableStandIns) {
  EXPECT_EQ(Gpt2ByteToken(' '), "Ġ");
  EXPECT_EQ(Gpt2ByteToken('\n'), "Ċ");
  EXPECT_EQ(Gpt2ByteToken('a'), "a");
  EXPECT_EQ(Gpt2ByteToken('!'), "!");
  EXPECT_EQ(Gpt2ByteToken(0x00), "Ā");
  EXPECT_EQ(Gpt2ByteToken(0xad), "Ń");  // the soft hyphen is not printable
  EXPECT_EQ(Gpt2ByteToken(0xff), "ÿ");
  std::set<std::string> distinct;
  for (int b = 0; b < 256; ++b) distinct.insert(Gpt2ByteToken(static_cast<std::uint8_t>(b)));
  EXPECT_EQ(distinct.size(), 256u);
}

TEST(ByteBpeVocabTest, HasExactlyTheRequestedSizeWithUniqueTokens) {
  for (std::int64_t size : {260, 261, 300, 1024, 2048, 50000}) {
    ByteBpeVocab vocab = BuildByteBpeVocab(size);
    ASSERT_EQ(vocab.tokens.size(), static_cast<std::size_t>(size));
    ASSERT_EQ(vocab.token_types.size(), vocab.tokens.size());
    std::unordered_set<std::string> unique(vocab.tokens.begin(), vocab.tokens.end());
    EXPECT_EQ(unique.size(), vocab.tokens.size()) << size;
  }
  EXPECT_TRUE(BuildByteBpeVocab(260).merges.empty());
}

TEST(ByteBpeVocabTest, ByteTokensComeFirstAndControlTokensLast) {
  ByteBpeVocab vocab = BuildByteBpeVocab(1024);
  EXPECT_EQ(vocab.tokens[32], "Ġ");
  EXPECT_EQ(vocab.tokens[97], "a");
  EXPECT_EQ(vocab.bos, 1020u);
  EXPECT_EQ(vocab.eos, 1021u);
  EXPECT_EQ(vocab.pad, 1022u);
  EXPECT_EQ(vocab.unk, 1023u);
  EXPECT_THAT(std::vector<std::string>(vocab.tokens.end() - 4, vocab.tokens.end()),
              ElementsAre("<|begin_of_text|>", "<|end_of_text|>", "<|pad|>", "<|unk|>"));
  for (std::size_t i = 0; i < vocab.tokens.size(); ++i) {
    EXPECT_EQ(vocab.token_types[i], i >= 1020 ? kTokenTypeControl : kTokenTypeNormal) << i;
  }
}

TEST(ByteBpeVocabTest, EveryMergeJoinsTwoTokensIntoAToken) {
  ByteBpeVocab vocab = BuildByteBpeVocab(2048);
  std::unordered_set<std::string> tokens(vocab.tokens.begin(), vocab.tokens.end());
  for (const std::string& merge : vocab.merges) {
    std::size_t space = merge.find(' ');
    ASSERT_NE(space, std::string::npos) << merge;
    std::string a = merge.substr(0, space);
    std::string b = merge.substr(space + 1);
    EXPECT_TRUE(tokens.contains(a) && tokens.contains(b) && tokens.contains(a + b)) << merge;
  }
}

TEST(ByteBpeVocabTest, CommonEnglishWordsAreSingleTokens) {
  ByteBpeVocab vocab = BuildByteBpeVocab(1024);
  EXPECT_THAT(BpeWord(vocab, " the"), ElementsAre("Ġthe"));
  EXPECT_THAT(BpeWord(vocab, " model"), ElementsAre("Ġmodel"));
  EXPECT_THAT(BpeWord(vocab, "The"), ElementsAre("The"));
  EXPECT_THAT(BpeWord(vocab, " different"), ElementsAre("Ġdifferent"));
  EXPECT_THAT(BpeWord(vocab, "\n"), ElementsAre("Ċ"));
  // A word it never saw still encodes, in pieces.
  EXPECT_GT(BpeWord(vocab, " orchestrator").size(), 1u);
}

TEST(ByteBpeVocabTest, LargerVocabulariesExtendSmallerOnes) {
  ByteBpeVocab small = BuildByteBpeVocab(1024);
  ByteBpeVocab large = BuildByteBpeVocab(4096);
  EXPECT_TRUE(std::equal(small.tokens.begin(), small.tokens.end() - 4, large.tokens.begin()));
  EXPECT_TRUE(std::equal(small.merges.begin(), small.merges.end(), large.merges.begin()));
}

}  // namespace
}  // namespace orch::model
