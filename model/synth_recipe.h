// Recipes for generated test models: `synth:llama:vocab=1024,embd=128,layers=4,...`.
//
// A recipe names a deterministic llama-architecture GGUF that `orch model synth` writes
// byte-identically on every machine. Missing keys take the defaults below; the canonical
// text lists every key in a fixed order, so equal models have equal recipe text.
// Grammar (docs/spec.md): [synth:]ARCH[:KEY=VALUE{,KEY=VALUE}].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::model {

struct SynthRecipe {
  std::string arch = "llama";
  std::int64_t vocab = 1024;  // >= 260: 256 byte tokens plus control tokens
  std::int64_t embd = 128;    // model width; divisible by heads
  std::int64_t layers = 4;
  std::int64_t heads = 4;     // embd / heads is the head dimension (even)
  std::int64_t kv_heads = 2;  // divides heads (grouped-query attention)
  std::int64_t ff = 384;      // feed-forward width
  std::int64_t ctx = 512;     // trained context length
  std::int64_t seed = 1;      // weight generator seed
  std::string type = "f32";   // tensor type written: f32, f16 or bf16
  // Chat template written as tokenizer.chat_template: "none" (no key) or "chatml"
  // (kChatMlTemplate). The canonical text names it only when it is not "none", so
  // recipes without it keep their text (and job ids).
  std::string chat = "none";
};

// The ChatML template a recipe with chat=chatml carries (the Jinja text of the
// common ChatML models; llama.cpp's llama_chat_apply_template detects it as chatml).
inline constexpr char kChatMlTemplate[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Parses and checks a recipe; the error names the key and the value.
Result<SynthRecipe> ParseSynthRecipe(std::string_view text);

// "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1,type=f32",
// then ",chat=chatml" when the recipe has a chat template
std::string CanonicalRecipe(const SynthRecipe& recipe);

}  // namespace orch::model
