// A valid experiment spec in the real input language, for tests to start from and edit.
#pragma once

#include <string>

#include "base/check.h"

namespace orch::testing {

// Two workloads (one teacher-forced, one generate), five axes with alternatives, three
// baseline repeats: 3*2 baseline + 5 cells*1 (sampler.seed: generate only) + ... jobs.
inline std::string ValidSpecText() {
  return R"toml(
[experiment]
name = "unit"
description = "a small OFAT study"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "readme"
kind = "teacher_forced"
text = "The quick brown fox"
positions = 16
capture = { top_logits = 8, full_every = 4, full_windows = [[0, 2]] }

[[workloads]]
name = "story"
kind = "generate"
prompt = "Once upon a time"
max_tokens = 8

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "q4_0"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
sampler.seed = 42

[alternatives]
attention = ["on"]
quant = ["q8_0", "f16"]
kv = ["q8_0/f16"]
sampler.seed = [43]

[repeats]
baseline = 3
cells = 1
)toml";
}

// A spec with `repeats` baseline jobs of one teacher-forced workload on engine
// "llama.cpp@v0.4.0", CPU hardware, and no alternatives.
inline std::string SmallSpec(const std::string& name = "exp", int repeats = 1) {
  return R"toml(
[experiment]
name = ")toml" +
         name + R"toml("

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "readme"
kind = "teacher_forced"
text = "The quick brown fox"
positions = 16

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "q4_0"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1

[repeats]
baseline = )toml" +
         std::to_string(repeats) + "\ncells = 1\n";
}

// `text` with the first occurrence of `from` replaced by `to`; aborts if absent so that
// a test never silently runs on the unmodified spec.
inline std::string Replace(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  ORCH_CHECK(at != std::string::npos) << "test spec has no " << from;
  return text.replace(at, from.size(), to);
}

}  // namespace orch::testing
