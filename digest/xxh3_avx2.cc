// XXH3 compiled with -mavx2, flags in digest/CMakeLists.txt (xxh3_isa.h).
#define ORCH_XXH3_ISA Avx2
#include "digest/xxh3_isa.inc"
