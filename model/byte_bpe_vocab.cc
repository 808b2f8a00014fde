#include "model/byte_bpe_vocab.h"

#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/check.h"

namespace orch::model {
namespace {

// Merged first, most useful first. A leading '_' stands for a leading space.
constexpr std::string_view kWords =
    "_the _of _and _to _a _in _is _it _that _for _on _with _as _was _he _be _at _by _this "
    "_are _or _from _have _not _an _but _they _which _you _one _we _all _were _his _her "
    "_there _can _has _more _if _will _their _would _what _about _when _so _no _out _up "
    "_them _some _time _into _other _than _then _only _its _two _may _these _first _also "
    "_new _like _could _been _any _after _over _do _how _our _make _most _between _where "
    "_same _each _many _much _before _through _because _while _under _where _should "
    "_model _models _token _tokens _text _engine _engines _stack _stacks _position _weights "
    "_different _change _changes _run _runs _part _parts _number _question _answer _step "
    "_think _times _what _why _who _how _word _words _write _read _work _world _people "
    "_year _way _day _thing _man _long _little _very _good _great _old _right _small "
    "_large _high _last _own _place _point _hand _state _form _line _end _find _take _give "
    "_use _used _using _show _same _set _put _say _said _get _go _know _see _come _look "
    "_want _need _call _try _ask _keep _let _begin _seem _help _turn _start _might _move "
    "_live _believe _bring _happen _must _every _again _never _here _still _even _back "
    "_down _off _well _just _now _each _both _those _such _own _same _few _less _next "
    "_early _young _important _public _able _free _open _whole _kind _case _fact _group "
    "_problem _system _program _order _result _value _level _data _file _code _test "
    "_one _two _three _four _five _six _seven _eight _nine _ten _hundred _thousand "
    "_first _second _third _last _same _other _real _true _false _yes _no _not "
    "The This In It A To I He She We They What Question Answer If When As For And "
    "_The _I _A _In _It _This _He _We _They _If _When "
    "ing ed er es ly tion ment ness able al ic ous ive ity s d y e n t r "
    "'s 're 've 'll 'd 't 'm";

// Letters the filler strings are made of, most frequent in English first.
constexpr std::string_view kLetters = "etaoinshrdlcumwfgypbvkjxqz";

constexpr std::string_view kSpace = "\xc4\xa0";  // "Ġ", GPT-2's stand-in for ' '

bool IsPrintable(int byte) {
  return (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || byte >= 0xae;
}

std::string Utf8(std::uint32_t code_point) {
  std::string out;
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else {  // GPT-2's mapping stays below U+0800: two bytes
    out.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
  return out;
}

std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;) {
    if (word.front() == '_') word = " " + word.substr(1);
    words.push_back(word);
  }
  return words;
}

using RankMap = std::unordered_map<std::string, std::size_t>;  // "A B" -> rank

std::vector<std::string> ApplyMerges(std::vector<std::string> pieces, const RankMap& ranks) {
  while (pieces.size() > 1) {
    std::size_t best = 0;
    std::size_t best_rank = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
      auto it = ranks.find(pieces[i] + " " + pieces[i + 1]);
      if (it != ranks.end() && it->second < best_rank) {
        best = i;
        best_rank = it->second;
      }
    }
    if (best_rank == std::numeric_limits<std::size_t>::max()) break;
    pieces[best] += pieces[best + 1];
    pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return pieces;
}

std::vector<std::string> ByteUnits(std::string_view word) {
  std::vector<std::string> units;
  for (char c : word) units.push_back(Gpt2ByteToken(static_cast<std::uint8_t>(c)));
  return units;
}

// Grows the vocabulary to `target` normal tokens, one merge at a time.
class VocabBuilder {
 public:
  VocabBuilder(ByteBpeVocab& vocab, std::size_t target) : vocab_(vocab), target_(target) {
    for (const std::string& token : vocab_.tokens) known_.insert(token);
  }

  bool full() const { return vocab_.tokens.size() >= target_; }

  // Adds the merges that make `word` one token (as far as room allows).
  void AddWord(std::string_view word) {
    std::vector<std::string> pieces = ApplyMerges(ByteUnits(word), ranks_);
    while (pieces.size() > 1 && !full()) {
      Merge(pieces[0], pieces[1]);
      pieces[0] += pieces[1];
      pieces.erase(pieces.begin() + 1);
    }
  }

  // Adds letter strings ("Ġe", "Ġt", ..., "et", ...) by length until full.
  void FillWithLetterStrings() {
    std::vector<std::string> level = {std::string(kSpace)};
    for (char c : kLetters) level.emplace_back(1, c);
    while (!full()) {
      std::vector<std::string> next;
      for (const std::string& prefix : level) {
        for (char c : kLetters) {
          if (full()) return;
          std::string letter(1, c);
          if (!known_.contains(prefix + letter)) Merge(prefix, letter);
          next.push_back(prefix + letter);
        }
      }
      level = std::move(next);
    }
  }

 private:
  void Merge(const std::string& a, const std::string& b) {
    std::string key = a + " " + b;
    if (ranks_.contains(key)) return;
    ranks_.emplace(key, vocab_.merges.size());
    vocab_.merges.push_back(std::move(key));
    if (known_.insert(a + b).second) {
      vocab_.tokens.push_back(a + b);
      vocab_.token_types.push_back(kTokenTypeNormal);
    }
  }

  ByteBpeVocab& vocab_;
  std::size_t target_;
  std::unordered_set<std::string> known_;
  RankMap ranks_;
};

}  // namespace

std::string Gpt2ByteToken(std::uint8_t byte) {
  if (IsPrintable(byte)) return Utf8(byte);
  std::uint32_t n = 0;  // the n-th non-printable byte maps to U+0100 + n
  for (int b = 0; b < byte; ++b) n += IsPrintable(b) ? 0 : 1;
  return Utf8(0x100 + n);
}

ByteBpeVocab BuildByteBpeVocab(std::int64_t vocab_size) {
  ORCH_CHECK(vocab_size >= 260 && vocab_size <= (1 << 20)) << "vocab " << vocab_size;
  constexpr std::string_view kControl[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|pad|>",
                                           "<|unk|>"};
  ByteBpeVocab vocab;
  for (int b = 0; b < 256; ++b) {
    vocab.tokens.push_back(Gpt2ByteToken(static_cast<std::uint8_t>(b)));
    vocab.token_types.push_back(kTokenTypeNormal);
  }
  VocabBuilder builder(vocab, static_cast<std::size_t>(vocab_size) - std::size(kControl));
  for (const std::string& word : SplitWords(kWords)) {
    if (builder.full()) break;
    builder.AddWord(word);
  }
  builder.FillWithLetterStrings();
  auto id = static_cast<std::uint32_t>(vocab.tokens.size());
  vocab.bos = id;
  vocab.eos = id + 1;
  vocab.pad = id + 2;
  vocab.unk = id + 3;
  for (std::string_view control : kControl) {
    vocab.tokens.emplace_back(control);
    vocab.token_types.push_back(kTokenTypeControl);
  }
  return vocab;
}

std::vector<std::string> BpeWord(const ByteBpeVocab& vocab, std::string_view word) {
  RankMap ranks;
  for (std::size_t i = 0; i < vocab.merges.size(); ++i) ranks.emplace(vocab.merges[i], i);
  return ApplyMerges(ByteUnits(word), ranks);
}

}  // namespace orch::model
