#!/usr/bin/env python3
"""Where oneDNN's time goes: sums ONEDNN_VERBOSE=1 `exec` lines by primitive.

    ONEDNN_VERBOSE=1 build/tools/pf-bench conv_lenet_step > pf.log
    ONEDNN_VERBOSE=1 python tools/bench/compare_cnn_torch.py --torch-worker lenet 2 > torch.log
    python3 tools/bench/onednn_verbose_table.py pf.log [--by-impl]

Reads oneDNN 2.x lines (`dnnl_verbose,exec,cpu,...`) and 3.x lines (`onednn_verbose,primitive,
exec,cpu,...`, with or without a timestamp). Groups by primitive kind, propagation, the
implementation (jit:avx2, brgconv:avx512_core, ...), the problem's minibatch and channels
(`mb64_ic32oc64`; reorders: the dims), and the memory formats (`acdb` is NHWC, `ABcd16b16a`
and the like blocked weights). Prints a markdown table: calls, the summed milliseconds of
oneDNN's own per-call timer, the share, the median call. Times are wall time of each call:
primitives that run at once on different threads each count in full.
--by-impl groups by kind, propagation and implementation family only.
"""
import collections
import re
import sys


def parse(path, by_impl):
    agg = collections.defaultdict(list)
    for line in open(path, errors="replace"):
        if not line.startswith(("dnnl_verbose", "onednn_verbose")):
            continue
        f = line.rstrip("\n").split(",")
        if "exec" not in f:
            continue
        i = f.index("exec")
        if len(f) < i + 7:
            continue
        kind, impl, prop, mds = f[i + 2], f[i + 3], f[i + 4], f[i + 5]
        try:
            ms = float(f[-1])
        except ValueError:
            continue
        if by_impl:
            key = (kind, prop, impl.split(":")[0], "", "")
        elif kind == "reorder":
            key = (kind, prop, impl, f[-2], " -> ".join(re.findall(r"blocked:([A-Za-z0-9]+)", mds)))
        else:
            shape = re.match(r"((?:g\d+)?mb\d+_ic\d+oc\d+)", f[-2])
            tags = sorted(set(re.findall(r"blocked:([A-Za-z0-9]+)", mds)))
            key = (kind, prop, impl, shape.group(1) if shape else "", " ".join(tags))
        agg[key].append(ms)
    return agg


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    agg = parse(args[0], "--by-impl" in sys.argv)
    total = sum(sum(v) for v in agg.values()) or 1.0
    print("| primitive | propagation | implementation | problem | formats | calls | ms | share "
          "| median ms/call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, v in sorted(agg.items(), key=lambda kv: -sum(kv[1])):
        med = sorted(v)[len(v) // 2]
        print(f"| {' | '.join(k)} | {len(v)} | {sum(v):.1f} | {100 * sum(v) / total:.1f}% "
              f"| {med:.2f} |")
    print(f"total {total:.1f} ms in {sum(len(v) for v in agg.values())} calls")


if __name__ == "__main__":
    main()
