#include "model/synth_recipe.h"

#include <gtest/gtest.h>

namespace orch::model {
namespace {

TEST(SynthRecipeTest, FillsDefaultsAndCanonicalisesKeyOrder) {
  Result<SynthRecipe> a = ParseSynthRecipe("synth:llama:seed=9,vocab=2048");
  Result<SynthRecipe> b = ParseSynthRecipe("llama:vocab=2048,seed=9");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(CanonicalRecipe(*a), CanonicalRecipe(*b));
  EXPECT_EQ(CanonicalRecipe(*a),
            "llama:vocab=2048,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=9,"
            "type=f32");
  EXPECT_EQ(CanonicalRecipe(*ParseSynthRecipe("llama")), CanonicalRecipe(SynthRecipe{}));
}

TEST(SynthRecipeTest, RejectsUnknownKeysArchitecturesAndShapes) {
  EXPECT_EQ(ParseSynthRecipe("llama:width=3").status().message(),
            "unknown synth key \"width\"; expected vocab, embd, layers, heads, kv_heads, ff, "
            "ctx, seed, type or chat");
  EXPECT_EQ(ParseSynthRecipe("mamba:vocab=300").status().message(),
            "synth: unknown architecture \"mamba\"; expected \"llama\" (e.g. "
            "\"llama:vocab=1024,embd=128\")");
  EXPECT_EQ(ParseSynthRecipe("llama:heads=3").status().message(),
            "synth: embd (128) must be divisible by heads (3) with an even head dimension");
  EXPECT_EQ(ParseSynthRecipe("llama:heads=4,kv_heads=3").status().message(),
            "synth: kv_heads (3) must divide heads (4)");
  EXPECT_EQ(ParseSynthRecipe("llama:vocab=100").status().message(),
            "synth key vocab: expected an integer in [260, 1048576], got \"100\"");
  EXPECT_EQ(ParseSynthRecipe("llama:type=q4_0").status().message(),
            "synth key type: expected f32, f16 or bf16, got \"q4_0\"");
  EXPECT_EQ(ParseSynthRecipe("llama:chat=jinja").status().message(),
            "synth key chat: expected none or chatml, got \"jinja\"");
}

TEST(SynthRecipeTest, ChatKeyIsNamedOnlyWhenTheRecipeHasATemplate) {
  EXPECT_EQ(CanonicalRecipe(*ParseSynthRecipe("llama:chat=none")), CanonicalRecipe(SynthRecipe{}));
  EXPECT_EQ(CanonicalRecipe(*ParseSynthRecipe("llama:chat=chatml,seed=2")),
            "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=2,"
            "type=f32,chat=chatml");
}

}  // namespace
}  // namespace orch::model
