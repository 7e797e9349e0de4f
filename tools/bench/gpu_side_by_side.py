#!/usr/bin/env python3
"""placeflow beside PyTorch eager on the same GPU, interleaved in one call (issue 31).

    python3 tools/bench/gpu_side_by_side.py [--build build-gpu] [--rounds 2] [--budget 120]
    python3 tools/bench/gpu_side_by_side.py --dry-run      # the commands it would run; runs nothing
    python3 tools/bench/gpu_side_by_side.py --smoke --allow-cpu --torch-device cpu   # no GPU: a
                                             # seconds-long check of the script itself, no figures

Figures (placeflow's side is the tool a user runs, with its default flags, on /gpu:0):
  lenet        pf-train --model lenet --devices gpu, batch 100: examples/s of the last epoch
               (training only; evaluation is outside the timing). PyTorch: the same network
               (conv 5x5x32 SAME + ReLU, maxpool 2, conv 5x5x64 SAME + ReLU, maxpool 2, dense 512
               ReLU, dropout 0.4, dense 10), Adam 1e-3 decayed 0.9 per epoch. Goal >= 1.5x.
  mnist_mlp    pf-train --model mnist_mlp: 784-500-10, softmax cross-entropy + 1e-4 L2, SGD 0.3
               decayed 0.99 per epoch, moving averages (0.99) of the weights after each step.
               Goal >= 2x.
  mlp_seed000  pf-bench mlp_seed000_step_gpu (ms per SGD step at batch 2000, inputs fed from the
               host each step) against the same step in PyTorch. Goal: time <= 0.5x PyTorch's.
  mlp_seed000_graphs  pf-bench mlp_seed000_step_gpu_graphs, only when `pf-bench --help` lists it
               (CUDA graphs); the PyTorch peer is the same eager step. Goal as mlp_seed000.
  cnn_seed004  pf-train --model cnn_seed004: Keras's MobileNetV2 block table at width 0.35 on
               28x28 (stem stride 2, batch norm eps 1e-3 momentum 0.9, Adam 1e-3). Goal >= 1.2x.

PyTorch's side, in this process (imported once): CUDA tensors, torch.backends.cudnn.benchmark on,
TF32 off (placeflow's float32 default), the training set shuffled each epoch into a pinned
host buffer and each batch copied with non_blocking=True, the loss summed on the device (no
per-step host sync; --torch-sync-loss reads it every step as pf-train does). Each pf command
runs in its own process. Rounds interleave the two sides (pf first, then PyTorch first in the
next round); the figure is the median over rounds. ratio = placeflow speed / PyTorch speed
(examples/s over examples/s, or PyTorch ms over placeflow ms): above 1, placeflow is faster.

Data: --data DIR, else $PF_GPU_DATA, else the first of .gpu/data/mnist, shared/data/mnist,
../shared/data/mnist, /usr/share/datasets/fashion-mnist that has the four IDX files; else
random images of MNIST's shape are written to a temporary folder (timings hold, accuracies do
not: the table says data=synthetic).

Without a usable GPU nothing is measured: every figure says SKIPPED and the exit status is 3.
Exit status: 0 every figure has both sides, 1 a figure failed or is missing a side, 2 bad
arguments, 3 skipped (no GPU). PyTorch is a benchmark peer only, never a dependency of
placeflow; it needs a CUDA build of PyTorch (torch.cuda.is_available()).
"""
import argparse
import gzip
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

BATCH = 100
# name: what placeflow runs, the sizes of a short run, the goal (ratio placeflow/PyTorch speed).
FIGURES = {
    "lenet": {"kind": "train", "model": "lenet", "train_limit": 30000, "epochs": 2,
              "goal": 1.5, "goal_text": ">= 1.5x ex/s"},
    "mnist_mlp": {"kind": "train", "model": "mnist_mlp", "train_limit": 60000, "epochs": 2,
                  "goal": 2.0, "goal_text": ">= 2x ex/s"},
    "mlp_seed000": {"kind": "step", "bench": "mlp_seed000_step_gpu",
                    "goal": 2.0, "goal_text": "time <= 0.5x"},
    "mlp_seed000_graphs": {"kind": "step", "bench": "mlp_seed000_step_gpu_graphs", "optional": True,
                           "goal": 2.0, "goal_text": "time <= 0.5x"},
    "cnn_seed004": {"kind": "train", "model": "cnn_seed004", "train_limit": 6000, "epochs": 2,
                    "goal": 1.2, "goal_text": ">= 1.2x ex/s"},
}
DEFAULT_FIGURES = ["lenet", "mnist_mlp", "mlp_seed000", "mlp_seed000_graphs", "cnn_seed004"]
TEST_LIMIT = 2000
IDX_FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ data


def has_idx(d):
    return all(os.path.exists(os.path.join(d, f)) or os.path.exists(os.path.join(d, f + ".gz"))
               for f in IDX_FILES)


def find_data(explicit):
    if explicit == "synthetic":
        return None, "asked"
    if explicit:
        return os.path.abspath(explicit), "given"
    cands = [os.environ.get("PF_GPU_DATA", ""), ".gpu/data/mnist", "shared/data/mnist",
             "../shared/data/mnist", "/usr/share/datasets/fashion-mnist"]
    for c in cands:
        if c and os.path.isdir(c) and has_idx(c):
            return os.path.abspath(c), "found"
    return None, "none"


def write_synthetic(folder, n_train, n_test, seed=1):
    """Random 28x28 uint8 images and labels in [0, 10), as uncompressed IDX files."""
    import random
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        with open(os.path.join(folder, prefix + "-images-idx3-ubyte"), "wb") as f:
            f.write((2051).to_bytes(4, "big") + n.to_bytes(4, "big") + (28).to_bytes(4, "big") * 2)
            f.write(rng.randbytes(n * 784))
        with open(os.path.join(folder, prefix + "-labels-idx1-ubyte"), "wb") as f:
            f.write((2049).to_bytes(4, "big") + n.to_bytes(4, "big"))
            f.write(bytes(rng.randrange(10) for _ in range(n)))
    return folder


def read_idx(d, name):
    p = os.path.join(d, name)
    if os.path.exists(p):
        raw = open(p, "rb").read()
    else:
        with gzip.open(p + ".gz", "rb") as f:
            raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    n = int.from_bytes(raw[4:8], "big")
    header = 16 if magic == 2051 else 8
    return n, raw[header:]


# ------------------------------------------------------------------------- placeflow side


def parse_kv(line):
    return dict(p.split("=", 1) for p in line.split() if "=" in p)


def run_cmd(cmd, timeout):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return None, out, time.monotonic() - start
    except OSError as e:
        return 127, str(e), time.monotonic() - start


def pf_train_cmd(args, fig, data):
    f = FIGURES[fig]
    return [os.path.join(args.build, "tools", "pf-train"), "--model", f["model"], "--devices",
            "gpu", "--batch", str(BATCH), "--data", data, "--epochs", str(f["epochs"]),
            "--train-limit", str(scaled(args, f["train_limit"])), "--test-limit",
            str(scaled(args, TEST_LIMIT)), "--quiet"]


def pf_bench_cmd(args, fig):
    return [os.path.join(args.build, "tools", "pf-bench"), FIGURES[fig]["bench"]]


def pf_run(args, fig, data, log_file, timeout):
    """(value, detail) or raises RuntimeError: examples/s of the last epoch, or ms per step."""
    f = FIGURES[fig]
    cmd = pf_train_cmd(args, fig, data) if f["kind"] == "train" else pf_bench_cmd(args, fig)
    rc, out, secs = run_cmd(cmd, timeout)
    log_file.write(f"=== {shlex.join(cmd)}\n{out}rc={rc} wall_s={secs:.2f}\n")
    log_file.flush()
    if rc is None:
        raise RuntimeError(f"timed out after {timeout:.0f} s")
    if rc != 0:
        tail = out.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"rc={rc}: {tail[0][:160]}")
    if f["kind"] == "step":
        for line in out.splitlines():
            if line.startswith(f["bench"] + " "):
                kv = parse_kv(line)
                if "skipped" in kv:
                    raise RuntimeError(f"skipped={kv['skipped']}")
                return float(kv["ms_per_step"]), ""
        raise RuntimeError(f"no '{f['bench']}' line")
    where = re.search(r"^pf-train: model .*? tower\(s\) on (\S+)", out, re.M)
    if not where or ("gpu" not in where.group(1).lower() and not args.allow_cpu):
        raise RuntimeError("did not run on a GPU: " +
                           (where.group(0) if where else "no model line"))
    epochs = re.findall(r"^epoch (\d+) loss=\S+ test_accuracy=(\S+) examples/s=(\d+)", out, re.M)
    if not epochs:
        raise RuntimeError("no epoch line")
    layout = re.search(r"variables on (\S+)", out)
    return float(epochs[-1][2]), (f"acc={epochs[-1][1]}" +
                                  (f" vars={layout.group(1)}" if layout else ""))


def pf_figures_available(args):
    rc, out, _ = run_cmd([os.path.join(args.build, "tools", "pf-bench"), "--help"], 60)
    if rc != 0:
        return set()
    return {m.group(1) for m in re.finditer(r"^  (\S+)", out, re.M)}


def pf_gpu_info(args):
    """(gpu_count, text) from pf-bench gpu_info."""
    rc, out, _ = run_cmd([os.path.join(args.build, "tools", "pf-bench"), "gpu_info"], 120)
    m = re.search(r"gpu_info count=(\d+)", out)
    if rc != 0 or not m:
        return 0, f"pf-bench gpu_info failed (rc={rc}): {out.strip()[:200]}"
    return int(m.group(1)), " | ".join(out.strip().splitlines()[:3])


def scaled(args, n):
    return max(BATCH * 2, int(n * args.scale))


# --------------------------------------------------------------------------- PyTorch side


class Torch:
    """PyTorch in this process: the models and their timed loops."""

    def __init__(self, args):
        import torch  # noqa: imported here so that --dry-run and --help need no torch
        self.torch = torch
        self.args = args
        self.dev = torch.device(args.torch_device)
        if self.dev.type == "cuda":
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.pin = self.dev.type == "cuda"
        self.data = {}

    def sync(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def describe(self):
        t = self.torch
        name = t.cuda.get_device_name(0) if self.dev.type == "cuda" else "cpu"
        return f"torch {t.__version__} on {name}"

    def load(self, data_dir, train_limit, test_limit):
        key = (data_dir, train_limit, test_limit)
        if key in self.data:
            return self.data[key]
        t = self.torch

        def images(name, limit):
            n, raw = read_idx(data_dir, name)
            n = min(n, limit) if limit else n
            u8 = t.frombuffer(bytearray(raw[:n * 784]), dtype=t.uint8).reshape(n, 1, 28, 28)
            return u8.float().div_(255.0)

        def labels(name, limit):
            n, raw = read_idx(data_dir, name)
            n = min(n, limit) if limit else n
            return t.frombuffer(bytearray(raw[:n]), dtype=t.uint8).long()

        d = (images("train-images-idx3-ubyte", train_limit),
             labels("train-labels-idx1-ubyte", train_limit),
             images("t10k-images-idx3-ubyte", test_limit),
             labels("t10k-labels-idx1-ubyte", test_limit))
        self.data[key] = d
        return d

    # -- models
    def lenet(self):
        nn = self.torch.nn
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Flatten(), nn.Linear(7 * 7 * 64, 512), nn.ReLU(), nn.Dropout(0.4),
            nn.Linear(512, 10))

    def mobilenet_v2(self, alpha, stem_stride, table, last_c):
        torch = self.torch
        nn, F = torch.nn, torch.nn.functional

        def divisible(v, d=8):
            r = max(d, int(v + d / 2) // d * d)
            return r + d if r < 0.9 * v else r

        def bn(c):  # Keras epsilon 1e-3; placeflow's momentum 0.9 is torch's 0.1
            return nn.BatchNorm2d(c, eps=1e-3, momentum=0.1)

        class SameConv(nn.Module):
            """k x k conv with TensorFlow's SAME padding (asymmetric where TF's is)."""

            def __init__(self, cin, cout, k, stride, groups=1):
                super().__init__()
                self.k, self.s = k, stride
                self.conv = nn.Conv2d(cin, cout, k, stride=stride, groups=groups, bias=False,
                                      padding=(k // 2 if stride == 1 else 0))

            def forward(self, x):
                if self.s != 1:
                    size = x.shape[-1]
                    total = max((math.ceil(size / self.s) - 1) * self.s + self.k - size, 0)
                    if total:
                        before, after = total // 2, total - total // 2
                        x = F.pad(x, (before, after, before, after))
                return self.conv(x)

        def conv_bn(cin, cout, k, stride, relu6, groups=1):
            layers = [SameConv(cin, cout, k, stride, groups), bn(cout)]
            return layers + [nn.ReLU6()] if relu6 else layers

        class Block(nn.Module):
            def __init__(self, cin, t, cout, stride):
                super().__init__()
                mid = cin * t
                layers = conv_bn(cin, mid, 1, 1, True) if t != 1 else []
                layers += conv_bn(mid, mid, 3, stride, True, groups=mid)
                layers += conv_bn(mid, cout, 1, 1, False)
                self.body = nn.Sequential(*layers)
                self.residual = stride == 1 and cin == cout

            def forward(self, x):
                h = self.body(x)
                return x + h if self.residual else h

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                c = divisible(32 * alpha)
                self.stem = nn.Sequential(*conv_bn(1, c, 3, stem_stride, True))
                blocks = []
                for t, out, n, s in table:
                    out = divisible(out * alpha)
                    for i in range(n):
                        blocks.append(Block(c, t, out, s if i == 0 else 1))
                        c = out
                self.blocks = nn.Sequential(*blocks)
                self.head = nn.Sequential(*conv_bn(c, last_c, 1, 1, True))
                self.logits = nn.Linear(last_c, 10)

            def forward(self, x):
                return self.logits(self.head(self.blocks(self.stem(x))).mean(dim=(2, 3)))

        return Net()

    def cnn_seed004(self):
        return self.mobilenet_v2(0.35, 2, [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2),
                                           (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                                           (6, 320, 1, 1)], 1280)

    # -- timed loops
    def _epochs(self, data, epochs, step_fn, evaluate):
        """Runs `epochs` passes; returns (examples/s of the last epoch, test accuracy)."""
        t = self.torch
        x_all, y_all, x_test, y_test = data
        steps = x_all.shape[0] // BATCH
        n = steps * BATCH
        px = t.empty((n, 1, 28, 28), pin_memory=self.pin)
        py = t.empty((n,), dtype=t.long, pin_memory=self.pin)
        gen = t.Generator().manual_seed(1)
        rate = 0.0
        for epoch in range(epochs):
            self.sync()
            start = time.perf_counter()
            # The shuffle is timed, as placeflow's pipeline shuffles inside its epoch.
            perm = t.randperm(x_all.shape[0], generator=gen)[:n]
            t.index_select(x_all, 0, perm, out=px)
            t.index_select(y_all, 0, perm, out=py)
            loss_sum = t.zeros((), device=self.dev)
            for i in range(steps):
                xb = px[i * BATCH:(i + 1) * BATCH].to(self.dev, non_blocking=True)
                yb = py[i * BATCH:(i + 1) * BATCH].to(self.dev, non_blocking=True)
                loss = step_fn(epoch, xb, yb)
                if self.args.torch_sync_loss:
                    loss_sum += float(loss.item())
                else:
                    loss_sum += loss.detach()
            self.sync()
            rate = n / (time.perf_counter() - start)
        with t.no_grad():
            correct = 0
            for i in range(0, x_test.shape[0], 1000):
                logits = evaluate(x_test[i:i + 1000].to(self.dev))
                correct += int((logits.argmax(1).cpu() == y_test[i:i + 1000]).sum())
        return rate, correct / max(1, x_test.shape[0])

    def train_cnn(self, model_name, data, epochs):
        t = self.torch
        t.manual_seed(1)
        model = getattr(self, model_name)().to(self.dev)
        if self.args.torch_channels_last:
            model = model.to(memory_format=t.channels_last)
        opt = t.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = t.nn.CrossEntropyLoss()

        def step(epoch, x, y):
            for g in opt.param_groups:
                g["lr"] = 1e-3 * 0.9 ** epoch  # ExponentialDecay(1e-3, per epoch, 0.9, staircase)
            if self.args.torch_channels_last:
                x = x.contiguous(memory_format=t.channels_last)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        def evaluate(x):
            model.eval()
            out = model(x)
            model.train()
            return out

        model.train()
        return self._epochs(data, epochs, step, evaluate)

    def train_mnist_mlp(self, data, epochs):
        t = self.torch
        g = t.Generator().manual_seed(1)

        def glorot(i, o):
            limit = (6.0 / (i + o)) ** 0.5
            return ((t.rand(i, o, generator=g) * 2 - 1) * limit).to(self.dev).requires_grad_()

        w1, w2 = glorot(784, 500), glorot(500, 10)
        b1 = t.zeros(500, device=self.dev, requires_grad=True)
        b2 = t.zeros(10, device=self.dev, requires_grad=True)
        params = [w1, b1, w2, b2]
        averages = [p.detach().clone() for p in params]
        opt = t.optim.SGD(params, lr=0.3)
        counter = [0]

        def logits(x, p):
            return t.relu(x.reshape(-1, 784) @ p[0] + p[1]) @ p[2] + p[3]

        def step(epoch, x, y):
            for grp in opt.param_groups:
                grp["lr"] = 0.3 * 0.99 ** epoch
            opt.zero_grad(set_to_none=True)
            loss = t.nn.functional.cross_entropy(logits(x, params), y) + \
                1e-4 * 0.5 * ((w1 * w1).sum() + (w2 * w2).sum())
            loss.backward()
            opt.step()
            counter[0] += 1
            decay = min(0.99, (1.0 + counter[0]) / (10.0 + counter[0]))  # TF's num_updates rule
            with t.no_grad():
                if hasattr(t, "_foreach_lerp_"):
                    t._foreach_lerp_(averages, [p.detach() for p in params], 1.0 - decay)
                else:
                    for a, p in zip(averages, params):
                        a.lerp_(p.detach(), 1.0 - decay)
            return loss

        return self._epochs(data, epochs, step, lambda x: logits(x, averages))

    def mlp_seed000_ms(self):
        """ms per SGD step of mlp_seed000 at batch 2000: median of 5 repeats of 10 steps."""
        t = self.torch
        g = t.Generator().manual_seed(1)
        dims = [600, 512, 128, 128, 1]
        params = []
        for i in range(4):
            limit = (6.0 / (dims[i] + dims[i + 1])) ** 0.5
            params.append(((t.rand(dims[i], dims[i + 1], generator=g) * 2 - 1) * limit)
                          .to(self.dev).requires_grad_())
            params.append(t.zeros((), device=self.dev, requires_grad=True))
        x = t.rand(2000, 600, generator=g)
        tgt = 2 * x + 1
        if self.pin:
            x, tgt = x.pin_memory(), tgt.pin_memory()

        def step():
            # Inputs come from the host every step, as placeflow's feeds do.
            xd, td = x.to(self.dev, non_blocking=True), tgt.to(self.dev, non_blocking=True)
            h = xd
            for i in range(4):
                h = h @ params[2 * i] + params[2 * i + 1]
                if i < 3:
                    h = t.relu(h)
            loss = ((h - td) ** 2).mean()
            for p in params:
                p.grad = None
            loss.backward()
            with t.no_grad():
                for p in params:
                    p -= 0.01 * p.grad

        for _ in range(5):
            step()
        self.sync()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(10):
                step()
            self.sync()
            times.append((time.perf_counter() - start) / 10)
        return statistics.median(times) * 1e3

    def run(self, fig, data_dir, args):
        f = FIGURES[fig]
        try:
            if f["kind"] == "step":
                return self.mlp_seed000_ms(), ""
            data = self.load(data_dir, scaled(args, f["train_limit"]), scaled(args, TEST_LIMIT))
            if fig == "mnist_mlp":
                rate, acc = self.train_mnist_mlp(data, f["epochs"])
            else:
                rate, acc = self.train_cnn(f["model"], data, f["epochs"])
            return rate, f"acc={acc:.4f}"
        finally:
            if self.dev.type == "cuda":
                self.torch.cuda.empty_cache()  # leave the GPU's memory to the next pf process


# ---------------------------------------------------------------------------------- driver


def fmt_value(kind, v):
    if v is None:
        return "-"
    return f"{v:.3f}" if kind == "step" else f"{v:.0f}"


def table(results, figs, header):
    rows = [("figure", "unit", "placeflow", "PyTorch", "ratio", "goal", "met")]
    for fig in figs:
        f, r = FIGURES[fig], results[fig]
        unit = "ms/step" if f["kind"] == "step" else "examples/s"
        pf, th = r.get("pf"), r.get("torch")
        ratio = met = "-"
        if pf is not None and th is not None:
            ratio_v = th / pf if f["kind"] == "step" else pf / th
            ratio = f"{ratio_v:.2f}x"
            met = "yes" if ratio_v >= f["goal"] else "no"
        pf_s = fmt_value(f["kind"], pf) if pf is not None else r.get("pf_note", "-")
        th_s = fmt_value(f["kind"], th) if th is not None else r.get("torch_note", "-")
        rows.append((fig, unit, pf_s, th_s, ratio, f["goal_text"], met))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = [header]
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def report(args, results, figs, how, rounds_done, t0, notes, skipped_everything):
    """The table, the samples and errors under it, and the notes."""
    for fig in figs:
        res = results[fig]
        for side in ("pf", "torch"):
            if res[side + "_samples"]:
                res[side] = statistics.median(res[side + "_samples"])
    scope = "SMOKE TEST (tiny sizes, not a measurement)" if args.smoke else "side by side"
    header = (f"# {scope}: placeflow vs PyTorch eager, batch {BATCH}, median of "
              f"{rounds_done} interleaved round(s); ratio = placeflow speed / PyTorch speed; "
              f"data={how}; {time.monotonic() - t0:.0f} s")
    text = table(results, figs, header)
    if skipped_everything:
        text += "\nSKIPPED: no GPU for placeflow and no CUDA PyTorch: nothing was measured"
    for fig in figs:
        for e in results[fig].get("errors", []):
            text += f"\n{fig}: {e}"
        d = results[fig]
        if d["pf_details"] or d["torch_details"]:
            kind = FIGURES[fig]["kind"]
            pf_s = [fmt_value(kind, v) for v in d["pf_samples"]]
            th_s = [fmt_value(kind, v) for v in d["torch_samples"]]
            text += (f"\n{fig}: pf samples {pf_s} {sorted(set(d['pf_details']))}; "
                     f"torch samples {th_s} {sorted(set(d['torch_details']))}")
    text += "\n" + "\n".join("# " + n for n in notes)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--build", default=os.environ.get("PF_BUILD", "build-gpu"),
                    help="placeflow's CUDA build folder (default $PF_BUILD or build-gpu)")
    ap.add_argument("--data", help="MNIST-format IDX folder, or 'synthetic' (default: see below)")
    ap.add_argument("--figures", default=",".join(DEFAULT_FIGURES),
                    help="comma-separated, of: " + ", ".join(FIGURES))
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    ap.add_argument("--budget", type=float, default=120.0,
                    help="seconds for everything; a round that would not fit is not started, a "
                         "figure whose last run would not fit is left out (default 120)")
    ap.add_argument("--run-timeout", type=float, default=60.0,
                    help="seconds one pf command may take (default 60)")
    ap.add_argument("--table", help="also write the table to this file")
    ap.add_argument("--json", help="also write every sample to this JSON file")
    ap.add_argument("--log", help="pf commands' full output (default: stderr)")
    ap.add_argument("--dry-run", action="store_true", help="print what would run; run nothing")
    ap.add_argument("--pf-only", action="store_true", help="no PyTorch side")
    ap.add_argument("--torch-only", action="store_true", help="no placeflow side")
    ap.add_argument("--torch-device", default="cuda", help="cuda (default); cpu only with --smoke")
    ap.add_argument("--torch-sync-loss", action="store_true",
                    help="PyTorch reads the loss every step, as pf-train does")
    ap.add_argument("--torch-channels-last", action="store_true",
                    help="PyTorch's CNNs in channels_last (default NCHW)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (1/50), one round: checks the script, measures nothing")
    ap.add_argument("--allow-cpu", action="store_true",
                    help="with --smoke: accept pf-train falling back to the CPU (no GPU here)")
    args = ap.parse_args()
    args.scale = 0.02 if args.smoke else 1.0
    if args.smoke:
        args.rounds = 1
    if (args.allow_cpu or args.torch_device != "cuda") and not args.smoke:
        ap.error("--allow-cpu and --torch-device cpu are for --smoke runs only")
    figs = [f.strip() for f in args.figures.split(",") if f.strip()]
    unknown = [f for f in figs if f not in FIGURES]
    if unknown:
        ap.error(f"unknown figure(s) {', '.join(unknown)}; figures: {', '.join(FIGURES)}")

    data, how = find_data(args.data)
    if args.dry_run:
        print(f"# dry run: nothing is executed; rounds={args.rounds} budget={args.budget:.0f}s "
              f"data={data or '(synthetic, written to a temporary folder)'}")
        print(f"{shlex.join([os.path.join(args.build, 'tools', 'pf-bench'), 'gpu_info'])}")
        print(f"{shlex.join([os.path.join(args.build, 'tools', 'pf-bench'), '--help'])}"
              "   # optional figures (mlp_seed000_step_gpu_graphs) run only when listed")
        for r in range(args.rounds):
            for fig in figs:
                f = FIGURES[fig]
                cmd = pf_train_cmd(args, fig, data or "SYNTHETIC") if f["kind"] == "train" \
                    else pf_bench_cmd(args, fig)
                if f["kind"] == "step":
                    what = "mlp_seed000 SGD step, batch 2000, 5 x 10 steps"
                else:
                    what = (f"{f['epochs']} epochs of {scaled(args, f['train_limit'])} examples, "
                            f"batch {BATCH}, pinned + non_blocking, cudnn.benchmark, no TF32")
                pair = [("pf", shlex.join(cmd)), ("torch", f"[in-process PyTorch] {fig}: {what}")]
                for side, text in (pair if r % 2 == 0 else pair[::-1]):
                    if (side == "pf" and args.torch_only) or (side == "torch" and args.pf_only):
                        continue
                    print(f"round {r + 1} {side:5} {text}")
        return 0

    t0 = time.monotonic()
    log_file = open(args.log, "a") if args.log else sys.stderr
    results = {fig: {"pf_samples": [], "torch_samples": [], "pf_details": [], "torch_details": []}
               for fig in figs}
    notes = []
    skipped_everything = False

    # placeflow: a GPU, and which figures this pf-bench has.
    pf_ok = not args.torch_only
    if pf_ok:
        count, info = pf_gpu_info(args)
        notes.append("placeflow: " + info)
        if count == 0 and not args.allow_cpu:
            pf_ok = False
            for fig in figs:
                results[fig]["pf_note"] = "SKIPPED(no GPU)"
        available = pf_figures_available(args)
        for fig in list(figs):
            f = FIGURES[fig]
            if f["kind"] == "step" and f.get("optional") and f["bench"] not in available:
                notes.append(f"{fig}: pf-bench has no {f['bench']}: left out")
                figs.remove(fig)
    # PyTorch: a CUDA build, imported once.
    torch_side = None
    if not args.pf_only:
        try:
            start = time.monotonic()
            torch_side = Torch(args)
            if torch_side.dev.type == "cuda" and not torch_side.torch.cuda.is_available():
                raise RuntimeError("no_cuda_torch (torch.cuda.is_available() is False)")
            notes.append(f"PyTorch: {torch_side.describe()} "
                         f"(import {time.monotonic() - start:.1f} s)")
        except Exception as e:  # ImportError, no CUDA build, no driver
            notes.append(f"PyTorch: SKIPPED ({type(e).__name__}: {e})")
            torch_side = None
            for fig in figs:
                results[fig]["torch_note"] = "SKIPPED(no CUDA torch)"
    if not pf_ok and torch_side is None:
        skipped_everything = True

    tmp = None
    if data is None:
        tmp = tempfile.TemporaryDirectory(prefix="pf-synthetic-mnist-")
        biggest = max([scaled(args, FIGURES[f].get("train_limit", 0)) for f in figs] +
                      [BATCH * 2])
        data = write_synthetic(tmp.name, biggest, scaled(args, TEST_LIMIT))
        how = "synthetic" + (" (asked)" if how == "asked" else "")
    notes.append(f"data: {data} ({how})")

    durations = {}  # (side, fig) -> seconds of the last run
    failed = set()  # (side, fig) that failed once: not tried again
    rounds_done = 0
    if not skipped_everything:
        for r in range(args.rounds):
            round_start = time.monotonic()
            if r > 0 and (round_start - t0) + durations.get("round", 0) > args.budget:
                notes.append(f"stopped after {r} round(s): another would pass the "
                             f"{args.budget:.0f} s budget")
                break
            for fig in figs:
                sides = ["pf", "torch"] if r % 2 == 0 else ["torch", "pf"]
                for side in sides:
                    if side == "pf" and not pf_ok or side == "torch" and torch_side is None:
                        continue
                    if (side, fig) in failed:
                        continue
                    elapsed = time.monotonic() - t0
                    if elapsed + durations.get((side, fig), 0) > args.budget:
                        notes.append(f"{fig} {side} round {r + 1}: left out (budget)")
                        if not results[fig][side + "_samples"]:
                            results[fig].setdefault(side + "_note", "not run (budget)")
                        continue
                    start = time.monotonic()
                    try:
                        if side == "pf":
                            limit = min(args.run_timeout, max(10.0, args.budget - elapsed))
                            v, detail = pf_run(args, fig, data, log_file, limit)
                        else:
                            v, detail = torch_side.run(fig, data, args)
                        results[fig][side + "_samples"].append(v)
                        results[fig][side + "_details"].append(detail)
                        log(f"round {r + 1} {fig} {side}: "
                            f"{fmt_value(FIGURES[fig]['kind'], v)} {detail}")
                    except Exception as e:
                        failed.add((side, fig))
                        results[fig][side + "_note"] = "FAILED"
                        results[fig].setdefault("errors", []).append(
                            f"{side}: {type(e).__name__}: {e}")
                        log(f"round {r + 1} {fig} {side}: FAILED {type(e).__name__}: {e}")
                    durations[(side, fig)] = time.monotonic() - start
            durations["round"] = time.monotonic() - round_start
            rounds_done = r + 1
            # What is known so far, in case the caller's timeout ends this process.
            if args.table:
                with open(args.table, "w") as f:
                    f.write(report(args, results, figs, how, rounds_done, t0, notes, False))
                    f.write("\n")

    text = report(args, results, figs, how, rounds_done, t0, notes, skipped_everything)
    print(text)
    for fig in figs:  # one machine-readable line per figure
        d = results[fig]
        k = FIGURES[fig]["kind"]
        pf_v = fmt_value(k, d["pf"]) if "pf" in d else "none"
        th_v = fmt_value(k, d["torch"]) if "torch" in d else "none"
        unit = "ms_per_step" if k == "step" else "examples_per_s"
        print(f"side_by_side figure={fig} unit={unit} placeflow={pf_v} torch={th_v} "
              f"goal_ratio={FIGURES[fig]['goal']}")
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"figures": results, "notes": notes, "smoke": args.smoke, "data": how,
                       "rounds": rounds_done}, f, indent=1)
    if skipped_everything or (not pf_ok and not args.torch_only):
        return 3
    complete = all(("pf" in results[f] or args.torch_only) and
                   ("torch" in results[f] or args.pf_only) for f in figs)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
