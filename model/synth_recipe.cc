#include "model/synth_recipe.h"

#include <charconv>
#include <vector>

namespace orch::model {
namespace {

struct IntKey {
  std::string_view name;
  std::int64_t SynthRecipe::*field;
  std::int64_t min;
  std::int64_t max;
};

constexpr IntKey kIntKeys[] = {
    {"vocab", &SynthRecipe::vocab, 260, 1 << 20},  {"embd", &SynthRecipe::embd, 8, 1 << 16},
    {"layers", &SynthRecipe::layers, 1, 256},      {"heads", &SynthRecipe::heads, 1, 1024},
    {"kv_heads", &SynthRecipe::kv_heads, 1, 1024}, {"ff", &SynthRecipe::ff, 1, 1 << 18},
    {"ctx", &SynthRecipe::ctx, 8, 1 << 20},        {"seed", &SynthRecipe::seed, 0, INT64_MAX},
};

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

Status SetKey(SynthRecipe& recipe, std::string_view key, std::string_view value) {
  if (key == "type") {
    if (value != "f32" && value != "f16" && value != "bf16") {
      return InvalidArgument("synth key type: expected f32, f16 or bf16, got \"" +
                             std::string(value) + "\"");
    }
    recipe.type = std::string(value);
    return Status::Ok();
  }
  if (key == "chat") {
    if (value != "none" && value != "chatml") {
      return InvalidArgument("synth key chat: expected none or chatml, got \"" +
                             std::string(value) + "\"");
    }
    recipe.chat = std::string(value);
    return Status::Ok();
  }
  for (const IntKey& k : kIntKeys) {
    if (k.name != key) continue;
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < k.min || v > k.max) {
      return InvalidArgument("synth key " + std::string(key) + ": expected an integer in [" +
                             std::to_string(k.min) + ", " + std::to_string(k.max) + "], got \"" +
                             std::string(value) + "\"");
    }
    recipe.*k.field = v;
    return Status::Ok();
  }
  return InvalidArgument("unknown synth key \"" + std::string(key) +
                         "\"; expected vocab, embd, layers, heads, kv_heads, ff, ctx, seed, "
                         "type or chat");
}

Status CheckShape(const SynthRecipe& r) {
  if (r.embd % r.heads != 0 || (r.embd / r.heads) % 2 != 0) {
    return InvalidArgument("synth: embd (" + std::to_string(r.embd) +
                           ") must be divisible by heads (" + std::to_string(r.heads) +
                           ") with an even head dimension");
  }
  if (r.heads % r.kv_heads != 0) {
    return InvalidArgument("synth: kv_heads (" + std::to_string(r.kv_heads) +
                           ") must divide heads (" + std::to_string(r.heads) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<SynthRecipe> ParseSynthRecipe(std::string_view text) {
  if (text.starts_with("synth:")) text.remove_prefix(6);
  SynthRecipe recipe;
  std::size_t colon = text.find(':');
  std::string_view arch = text.substr(0, colon);
  if (arch != "llama") {
    return InvalidArgument("synth: unknown architecture \"" + std::string(arch) +
                           "\"; expected \"llama\" (e.g. \"llama:vocab=1024,embd=128\")");
  }
  if (colon != std::string_view::npos && colon + 1 < text.size()) {
    for (std::string_view item : Split(text.substr(colon + 1), ',')) {
      std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return InvalidArgument("synth: expected KEY=VALUE, got \"" + std::string(item) + "\"");
      }
      ORCH_RETURN_IF_ERROR(SetKey(recipe, item.substr(0, eq), item.substr(eq + 1)));
    }
  }
  ORCH_RETURN_IF_ERROR(CheckShape(recipe));
  return recipe;
}

std::string CanonicalRecipe(const SynthRecipe& recipe) {
  std::string out = recipe.arch + ":";
  for (const IntKey& k : kIntKeys) {
    out += std::string(k.name) + "=" + std::to_string(recipe.*k.field) + ",";
  }
  out += "type=" + recipe.type;
  return recipe.chat == "none" ? out : out + ",chat=" + recipe.chat;
}

}  // namespace orch::model
