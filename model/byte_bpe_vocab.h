// The tokenizer of synthetic models: byte-level BPE in the GPT-2 style, which llama.cpp
// loads as tokenizer.ggml.model = "gpt2" with the "gpt-2" pre-tokenizer (docs/models.md).
//
// Layout for a vocabulary of N tokens (N >= 260), the same for every seed:
//   0..255      one token per byte, spelled with GPT-2's byte -> code point mapping
//               (space is "Ġ", newline "Ċ"), so any text can be encoded;
//   256..N-5    merged tokens: first common English words and word pieces (with and
//               without a leading space), then letter strings in length order
//               ("Ġqz", "qz", ... ) until the vocabulary is full;
//   N-4..N-1    control tokens <|begin_of_text|> (bos), <|end_of_text|> (eos), <|pad|>,
//               <|unk|>.
// Every merge "A B" creates the token AB; merges are listed highest priority first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orch::model {

// llama.cpp's token types (tokenizer.ggml.token_type).
inline constexpr std::int32_t kTokenTypeNormal = 1;
inline constexpr std::int32_t kTokenTypeControl = 3;

struct ByteBpeVocab {
  std::vector<std::string> tokens;        // UTF-8, unique
  std::vector<std::int32_t> token_types;  // one per token
  std::vector<std::string> merges;        // "A B"
  std::uint32_t bos = 0;
  std::uint32_t eos = 0;
  std::uint32_t pad = 0;
  std::uint32_t unk = 0;
};

// Precondition: 260 <= vocab_size <= 2^20 (checked).
ByteBpeVocab BuildByteBpeVocab(std::int64_t vocab_size);

// GPT-2's printable stand-in for `byte`, as UTF-8 ("Ġ" for ' ', "a" for 'a').
std::string Gpt2ByteToken(std::uint8_t byte);

// The tokens BPE with `vocab`'s merges splits `word` into (one pre-tokenized word, e.g.
// " the"), as token strings. For tests and diagnostics: builds the merge table each call.
std::vector<std::string> BpeWord(const ByteBpeVocab& vocab, std::string_view word);

}  // namespace orch::model
