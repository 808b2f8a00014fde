// XXH3 compiled with -mavx512f, flags in digest/CMakeLists.txt (xxh3_isa.h).
#define ORCH_XXH3_ISA Avx512
#include "digest/xxh3_isa.inc"
