// XXH3 compiled for the build's default instruction set, SSE2 on x86-64
// (xxh3_isa.h).
#define ORCH_XXH3_ISA Baseline
#include "digest/xxh3_isa.inc"
