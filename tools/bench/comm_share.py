#!/usr/bin/env python3
"""Communication share of a traced cluster step (a Chrome trace from pf-train --trace).

For each task's device row: the step's span, and the share of it during which no kernel ran
other than those that move or wait (_Send, _Recv, and sync replicas' QueueDequeue and
AccumulatorTakeGradient). Usage: comm_share.py TRACE.json
"""
import json
import sys


WAITING = ("_Send", "_Recv", "QueueDequeue", "AccumulatorTakeGradient")


def union(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main(path):
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    start = min(e["ts"] for e in spans)
    end = max(e["ts"] + e["dur"] for e in spans)
    step = end - start
    print(f"step {step / 1e3:.3f} ms over {len(names)} device rows")
    for pid, name in sorted(names.items()):
        compute = [(e["ts"], e["ts"] + e["dur"]) for e in spans if e["pid"] == pid and
                   e.get("args", {}).get("op", e.get("name")) not in WAITING]
        busy = union(compute)
        print(f"{name}: compute {busy / 1e3:.3f} ms, communication and waiting "
              f"{100 * (1 - busy / step):.0f}% of the step")


if __name__ == "__main__":
    main(sys.argv[1])
