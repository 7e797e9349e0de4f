#!/usr/bin/env bash
# Checks that every SimdCall body was compiled into its AVX2 and AVX-512 copies (issue 34's
# guard against silent scalar code): SimdCallAvx2<Fn> and SimdCallAvx512<Fn> (ops/op_util.h)
# run fn() inside a function compiled for that ISA, which vectorises fn's loops only when the
# compiler inlines fn there. When it keeps fn out of line instead, the copy merely calls the
# baseline (SSE2) code, and nothing else notices: batch norm's gradient apply pass ran that way,
# 9% of a MobileNetV2 step against 5% for its vectorised twin (docs/benchmarks.md). Prints each
# copy that calls or jumps to an `operator()` (a lambda or functor left out of line) and exits 1
# when there is one. Usage: check_simd_inlined.sh LIBRARY (an optimised x86-64 build).
set -euo pipefail
lib="$1"
objdump -d -C --no-show-raw-insn "$lib" | awk '
  /^[0-9a-f]+ <.*>:$/ {
    name = substr($0, index($0, "<") + 1)
    simd = (name ~ /^auto pf::SimdCallAvx(2|512)</)
    next
  }
  simd && /\t(call|jmp) / && /operator\(\)/ && !/<auto pf::SimdCallAvx/ {
    print "out of line in " substr(name, 1, 200) "\n    " substr($0, 1, 240)
    bad++
  }
  END {
    if (bad) { print bad " call(s) from a SIMD copy to code left out of line"; exit 1 }
  }'
