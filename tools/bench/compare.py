#!/usr/bin/env python3
"""Side by side on CPU: placeflow's pf-bench figures and the same graphs in TensorFlow 2.x
(tf.compat.v1 graph mode) and PyTorch 2.x, interleaved, one Markdown table of medians.

    python3 tools/bench/compare.py --pf build/tools/pf-bench \\
        [--python ~/pf-peers/bin/python] [--rounds 5] [--figures a,b,...]

The driver is stdlib only and never imports a peer: each measurement runs in a child process
(pf-bench FIGURE, pf-train, or compare_peers.py under --python), so the peers are never
dependencies of placeflow. Per round the order is placeflow, TensorFlow (one process per
intra/inter thread setting), PyTorch (one process per thread count), then the next round.
A peer process runs all the timing figures asked for at its thread setting; the peak-RSS figure
gets fresh processes of its own (os.wait4's ru_maxrss of each child), and so does
mobilenet_v2_step, whose process's peak RSS is a row of its own (pf-bench's too).

Printed: per figure, each side's median over the rounds with the min-max spread, the peers at
their best setting (named), and the ratio peer/placeflow in time (or memory): above 1,
placeflow is faster (or smaller). Rates (examples/s) are turned into the same sense.
docs/benchmarks.md says what each figure is on each side.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "compare_peers.py")

# figure -> (pf-bench key, rows it fills). executor_wide fills two rows.
FIGURES = {
    "mlp_seed000_step": {"ms_per_step": "mlp_seed000_step"},
    "mnist_mlp_epoch": {"examples_per_s": "mnist_mlp_epoch"},
    "executor_chain": {"us_per_node": "executor_chain"},
    "executor_wide": {"ms_1thread": "executor_wide_1", "ms_2threads": "executor_wide_2"},
    "session_run_overhead": {"us_per_run": "session_run_overhead"},
    "conv_lenet_step": {"ms": "conv_lenet_step"},
    "peak_rss": {},
    "input_pipeline": {"examples_per_s": "input_pipeline"},
    "while_loop": {"us_per_iteration": "while_loop"},
    "lstm_step": {"ms": "lstm_step", "ms_loop": "lstm_step_loop"},
    "image_folder": {"images_per_s": "image_folder"},
    "mobilenet_v2_step": {"ms": "mobilenet_v2_step", "peak_rss_mb": "mobilenet_v2_rss"},
}
# Figures each peer runs in a process of its own, whose peak RSS fills the second row.
SOLO = {"mobilenet_v2_step": "mobilenet_v2_rss"}
# Figures only TensorFlow has a twin of (tf.data, graph-mode while loops).
TF_ONLY = {"input_pipeline", "while_loop", "image_folder"}
# row -> (label, unit, higher is better)
ROWS = {
    "mlp_seed000_step": ("mlp_seed000 SGD step, batch 2000", "ms/step", False),
    "mnist_mlp_epoch": ("mnist_mlp epoch, batch 100", "examples/s", True),
    "executor_chain": ("executor_chain, 10,000 Neg", "µs/node", False),
    "executor_wide_1": ("executor_wide, 1 thread", "ms/run", False),
    "executor_wide_2": ("executor_wide, 2 threads", "ms/run", False),
    "session_run_overhead": ("session_run_overhead, 2 nodes", "µs/run", False),
    "conv_lenet_step": ("conv_lenet_step, batch 128", "ms/step", False),
    "peak_rss": ("peak RSS, 50 mlp_seed000 steps", "MiB", False),
    "while_loop": ("while_loop, i + 1 for 100,000 iterations", "µs/iteration", False),
    "lstm_step": ("lstm_step, LSTM 128, batch 64, 28 steps, fwd+bwd", "ms/step", False),
    "lstm_step_loop": ("lstm_step as a while loop (placeflow's fused=false; TF's is one)",
                       "ms/step", False),
    "input_pipeline": ("input_pipeline, MNIST TFRecord: shuffle, batch 100, parse, prefetch",
                       "examples/s", True),
    "image_folder": ("image_folder, 2,000 JPEGs 256x256 -> 224x224, batch 64", "images/s", True),
    "mobilenet_v2_step": ("mobilenet_v2_step, MobileNetV2 224x224x3, batch 8", "ms/step", False),
    "mobilenet_v2_rss": ("peak RSS of the mobilenet_v2_step process", "MiB", False),
}


def fail(msg):
    sys.exit(f"compare.py: {msg}")


def run_child(argv, env=None):
    """Runs argv to completion: (stdout, peak RSS in MiB). stderr goes to a file (TF logs a lot
    there; a pipe could fill and block the child) and is shown only on failure."""
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            fail(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{err.read()[-4000:]}")
    return out, usage.ru_maxrss / 1024.0  # KiB on Linux


def parse_line(line):
    name, *pairs = line.split()
    kv = {}
    for p in pairs:
        if "=" not in p:
            raise ValueError(f"'{p}' is not key=value")
        k, v = p.split("=", 1)
        kv[k] = v
    return name, kv


def pf_figure(pf_bench, figure):
    """{row: value} from `pf-bench FIGURE`; anything unexpected stops the run."""
    out, _ = run_child([pf_bench, figure])
    lines = [l for l in out.splitlines() if l.split()[:1] == [figure]]
    if len(lines) != 1:
        fail(f"{pf_bench} {figure}: expected one '{figure} ...' line, got:\n{out}")
    try:
        _, kv = parse_line(lines[0])
        if "skipped" in kv:
            raise ValueError(f"skipped={kv['skipped']}")
        return {row: float(kv[key]) for key, row in FIGURES[figure].items()}
    except (KeyError, ValueError) as e:
        fail(f"{pf_bench} {figure}: cannot read {e} in '{lines[0]}'")


def pf_peak_rss(pf_train):
    out, rss = run_child([pf_train, "--model", "mlp_seed000", "--steps", "50"])
    if "step 50/50 loss=" not in out:
        fail(f"{pf_train} --model mlp_seed000 --steps 50: no 'step 50/50 loss=' line in:\n{out}")
    return rss


# An ISA cap for placeflow (PF_MAX_CPU_ISA) caps the peers' libraries too, as an AVX2 or SSE4
# machine would: oneDNN's JIT (TF and PyTorch), MKL (PyTorch's GEMMs) and ATen's own kernels.
PEER_CAPS = {
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
             "ATEN_CPU_CAPABILITY": "avx2"},
    "sse4": {"ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
             "ATEN_CPU_CAPABILITY": "default"},
}


def peer_env(environ):
    """The peers' environment: TF's log quiet, and placeflow's ISA cap, if any, on their
    libraries (a cap the caller set explicitly for a library wins)."""
    env = dict(environ, TF_CPP_MIN_LOG_LEVEL="2")
    for key, value in PEER_CAPS.get(environ.get("PF_MAX_CPU_ISA", "").lower(), {}).items():
        env.setdefault(key, value)
    return env


def peer_figures(python, side, figures, setting, env):
    """{(row, variant): value} and the peer's version from one compare_peers.py process."""
    argv = [python, PEERS, side, ",".join(figures)]
    if side == "tf":
        argv += ["--intra", str(setting[0]), "--inter", str(setting[1])]
    else:
        argv += ["--threads", str(setting[0])] + (["--compile"] if setting[1] else [])
    out, rss = run_child(argv, env)
    values, version = {}, None
    for line in out.splitlines():
        try:
            figure, kv = parse_line(line)
            version = kv["version"]
            value = float(kv["value"])
        except (KeyError, ValueError, IndexError):
            continue  # a peer library's own chatter on stdout
        if figure == "executor_wide":
            one = setting == (1, 1) if side == "tf" else setting[0] == 1
            rows = ["executor_wide_1" if one else "executor_wide_2"]
        elif figure == "lstm_step":  # TF's dynamic_rnn is a while loop: the twin of both rows
            rows = ["lstm_step", "lstm_step_loop"] if side == "tf" else ["lstm_step"]
        elif figure == "peak_rss":
            rows, value = ["peak_rss"], rss
        elif figure in SOLO:
            rows = [figure]
            values[(SOLO[figure], kv["variant"])] = rss
        else:
            rows = [figure]
        for row in rows:
            values[(row, kv["variant"])] = value
    missing = [f for f in figures if not any(k[0].startswith(f) for k in values)]
    if missing:
        fail(f"{' '.join(argv)}: no value for {missing} in:\n{out}")
    return values, version


def setting_label(side, setting, variant):
    if side == "tf":
        label = f"intra {setting[0]}, inter {setting[1]}"
        return label + (f", {variant}" if variant != "-" else "")
    threads = f"{setting[0]} thread" + ("s" if setting[0] > 1 else "")
    return ("compile, " if setting[1] else "") + threads


def summarise(values):
    return statistics.median(values), min(values), max(values)


def fmt(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}" if x >= 1 else f"{x:.3f}"


def table(samples, versions, sides, rounds):
    """The Markdown table (and every setting's median) of what `samples` holds so far."""
    names = {"tf": f"TF {versions.get('tf', '')} graph",
             "torch": f"PyTorch {versions.get('torch', '')}"}
    out = [f"{rounds} rounds, interleaved; median (min–max) over the rounds; peers at their best "
           "setting; ratio = peer time / placeflow time (rates and memory likewise): above 1, "
           "placeflow is faster or smaller.", "",
           "| figure | unit | placeflow | " + " | ".join(names[s] for s in sides) + " | " +
           " | ".join(f"{names[s].split()[0]} / pf" for s in sides) + " |",
           "|---" * (3 + 2 * len(sides)) + "|"]
    details = []
    for row, (label, unit, higher) in ROWS.items():
        if "pf" not in samples[row]:
            continue
        pf_med, lo, hi = summarise(samples[row]["pf"][""])
        cells, ratios = [], []
        for s in sides:
            by_label = samples[row].get(s)
            if not by_label:
                cells.append("—")
                ratios.append("—")
                continue
            meds = {k: statistics.median(v) for k, v in by_label.items()}
            best = (max if higher else min)(meds, key=meds.get)
            med, blo, bhi = summarise(by_label[best])
            cells.append(f"{fmt(med)} ({fmt(blo)}–{fmt(bhi)}), {best}")
            ratios.append(f"{(pf_med / med if higher else med / pf_med):.2f}")
            details.append(f"- {label}, {names[s]}: " +
                           "; ".join(f"{k} {fmt(m)}" for k, m in meds.items()))
        out.append(f"| {label} | {unit} | {fmt(pf_med)} ({fmt(lo)}–{fmt(hi)}) | " +
                   " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    if details:
        out += ["", "Every setting's median:"] + details
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pf", default="build/tools/pf-bench", help="pf-bench binary")
    ap.add_argument("--pf-train", help="pf-train binary (default: next to pf-bench)")
    ap.add_argument("--python", default=sys.executable,
                    help="the peers' interpreter (a venv with tensorflow-cpu and torch)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--figures", default=",".join(FIGURES), help=", ".join(FIGURES))
    ap.add_argument("--peers", default="tf,torch", help="tf, torch or both")
    ap.add_argument("--tf-threads", default="1:1,2:1,2:2",
                    help="TF intra:inter settings, one process each")
    ap.add_argument("--torch-threads", default="1,2", help="torch.set_num_threads values")
    ap.add_argument("--torch-compile", action="store_true",
                    help="also torch.compile the seed MLP step (slow to compile)")
    a = ap.parse_args()

    figures = a.figures.split(",")
    for f in figures:
        if f not in FIGURES:
            fail(f"unknown figure '{f}'; figures: {', '.join(FIGURES)}")
    peers = a.peers.split(",")
    pf_train = a.pf_train or os.path.join(os.path.dirname(a.pf), "pf-train")
    for binary in [a.pf] + ([pf_train] if "peak_rss" in figures else []):
        if not os.access(binary, os.X_OK):
            fail(f"{binary} is not an executable: build pf-bench and pf-train first")
    tf_settings = [tuple(int(n) for n in s.split(":")) for s in a.tf_threads.split(",")]
    torch_settings = [(int(n), False) for n in a.torch_threads.split(",")]
    if a.torch_compile:
        torch_settings += [(n, True) for n, _ in torch_settings]
    env = peer_env(os.environ)
    timing = [f for f in figures if f != "peak_rss"]

    # samples[row][side][label] -> one value per round
    samples = {row: {} for row in ROWS}
    versions = {}

    def add(row, side, label, value):
        samples[row].setdefault(side, {}).setdefault(label, []).append(value)

    start = time.monotonic()
    for r in range(a.rounds):
        for f in timing:
            for row, v in pf_figure(a.pf, f).items():
                add(row, "pf", "", v)
        if "peak_rss" in figures:
            add("peak_rss", "pf", "", pf_peak_rss(pf_train))
        for side, settings in (("tf", tf_settings), ("torch", torch_settings)):
            if side not in peers:
                continue
            for setting in settings:
                fs = [f for f in timing if side == "tf" or (f not in TF_ONLY and (
                      not setting[1] or f == "mlp_seed000_step"))]
                batches = [[f] for f in fs if f in SOLO] + [[f for f in fs if f not in SOLO]]
                for batch in filter(None, batches):
                    values, versions[side] = peer_figures(a.python, side, batch, setting, env)
                    for (row, variant), v in values.items():
                        add(row, side, setting_label(side, setting, variant), v)
            if "peak_rss" in figures:
                setting = (2, 2) if side == "tf" else (2, False)
                values, versions[side] = peer_figures(a.python, side, ["peak_rss"], setting, env)
                add("peak_rss", side, setting_label(side, setting, "-"),
                    values[("peak_rss", "-")])
        print(f"round {r + 1}/{a.rounds} done after {time.monotonic() - start:.0f} s\n" +
              table(samples, versions, [s for s in ("tf", "torch") if s in peers], r + 1),
              file=sys.stderr, flush=True)

    print(table(samples, versions, [s for s in ("tf", "torch") if s in peers], a.rounds))


if __name__ == "__main__":
    main()
