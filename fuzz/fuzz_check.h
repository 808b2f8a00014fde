// FUZZ_EXPECT: the fuzz targets' property check. A broken property is a
// finding: it prints what broke and aborts, so that libFuzzer keeps the input
// as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_EXPECT(condition)                                                              \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
