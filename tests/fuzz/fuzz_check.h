// A property a target checks: a failure is a bug as real as a sanitizer report, so it stops the
// run (libFuzzer keeps the input as a crash) after naming the condition.
#pragma once

#include <cstdio>

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
      __builtin_trap();                                                       \
    }                                                                         \
  } while (0)
