#!/usr/bin/env python3
"""Side by side, in one run: placeflow's CNN training steps and the same networks in PyTorch.

    /work/torchvenv/bin/python tools/bench/compare_cnn_torch.py [path/to/pf-bench]
    /work/torchvenv/bin/python tools/bench/compare_cnn_torch.py --torch-only

PyTorch here is only a benchmark peer, never a dependency of placeflow: it comes from PyPI
(2.x, CPU use only) in a virtual environment outside the repository, e.g.
    python3 -m venv /work/torchvenv && /work/torchvenv/bin/pip install torch numpy
(compare.py puts the MLP, executor and lenet figures beside TensorFlow and PyTorch together.)

Figures, one training step at batch 128 on random 28x28x1 inputs with labels in [0, 10):
forward, sparse softmax cross-entropy, backward and an Adam update (lr 1e-3), the batch-norm
moving statistics updated too.
  - conv_lenet_step / lenet: conv 5x5x32 SAME + bias + ReLU, maxpool 2x2/2, conv 5x5x64 SAME +
    bias + ReLU, maxpool 2x2/2, flatten 7*7*64, dense 512 ReLU, dropout 0.4, dense 10.
  - mobilenet_small_step / mobilenet_v2_small: Keras's MobileNetV2 blocks at alpha 1.0 on 28x28,
    stem 3x3x32 stride 1, (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,2,1), 1x1 conv to
    256, global average pool, dense 10 (see models/cnn_models.cc).
placeflow runs NHWC; PyTorch runs channels_last (NHWC in memory, NCHW logical shapes) by
default: on the 2-core AVX-512 dev machine it was faster than NCHW for both models at 1 and 2
threads (mobilenet 1 thread ~0.6-0.85 s against ~0.85-1.1 s per step, lenet ~10-15% faster);
--layout nchw gives PyTorch's native layout.

Method: 5 rounds (--rounds), interleaved A/B (the order flips every round); per round and model,
pf-bench runs that one figure in its own process (its own median of 5 x 5 steps, and a peak RSS
for that model alone), and PyTorch runs in a fresh subprocess per model and thread count
(torch.set_num_threads 1 and 2), timed the same way as pf-bench (3 warm-up steps, median of 5
repeats of 5 steps), its peak RSS from getrusage(ru_maxrss). Printed: per-figure medians over
the rounds, PyTorch at its better thread count, and ratio = torch_ms / placeflow_ms (above 1:
placeflow is faster). Peak RSS of the PyTorch process includes libtorch itself (a few hundred MB
before any tensor), as placeflow's includes its own runtime.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

MODELS = [("conv_lenet_step", "lenet"), ("mobilenet_small_step", "mobilenet_v2_small")]
BATCH = 128
THREADS = (1, 2)


# ----------------------------------------------------------------------------- PyTorch side


def build_lenet(torch):
    nn = torch.nn

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 5, padding=2)  # SAME for 5x5 stride 1
            self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
            self.fc1 = nn.Linear(7 * 7 * 64, 512)
            self.logits = nn.Linear(512, 10)
            self.pool = nn.MaxPool2d(2, 2)
            self.drop = nn.Dropout(0.4)

        def forward(self, x):
            h = self.pool(torch.relu(self.conv1(x)))
            h = self.pool(torch.relu(self.conv2(h)))
            # NCHW flatten order differs from NHWC's; the cost is the same.
            h = self.drop(torch.relu(self.fc1(torch.flatten(h, 1))))
            return self.logits(h)

    return LeNet()


def make_divisible(v, divisor=8):
    """Keras's _make_divisible: a multiple of 8, never below 90% of v."""
    r = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return r + divisor if r < 0.9 * v else r


# Keras's MobileNetV2 block table: (t: expansion, c: channels, n: repeats, s: first stride).
KERAS_BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]


def build_mobilenet_v2(torch, alpha=1.0, in_c=1, stem_stride=1, table=None, last_c=256,
                       classes=10):
    """models/cnn_models.cc's MobileNetV2: a 3x3 stem (SAME) at stem_stride, the inverted
    residual blocks of `table`, a 1x1 conv to last_c, global average pool, dense `classes`."""
    nn = torch.nn
    F = torch.nn.functional

    def bn(c):
        # Keras BatchNormalization(epsilon=1e-3, momentum=0.99) = torch momentum 0.01.
        return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)

    class ConvSame(nn.Module):
        """3x3 conv (groups=c: depthwise) with TF's SAME padding. Stride 1: 1 each side.
        Stride 2 on an even size: TF pads 0 before and 1 after (torch's symmetric padding=1
        would pad 1 before too, shifting the window); F.pad(x, (0, 1, 0, 1)) then padding 0
        gives TF's output exactly (same size, same windows)."""

        def __init__(self, c_in, c_out, stride, groups):
            super().__init__()
            self.stride = stride
            self.conv = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1 if stride == 1 else 0,
                                  groups=groups, bias=False)

        def forward(self, x):
            if self.stride == 2:
                x = F.pad(x, (0, 1, 0, 1))
            return self.conv(x)

    class InvertedResidual(nn.Module):
        def __init__(self, in_c, t, out_c, stride):
            super().__init__()
            layers = []
            mid = in_c * t
            if t != 1:
                layers += [nn.Conv2d(in_c, mid, 1, bias=False), bn(mid), nn.ReLU6()]
            layers += [ConvSame(mid, mid, stride, mid), bn(mid), nn.ReLU6(),
                       nn.Conv2d(mid, out_c, 1, bias=False), bn(out_c)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and in_c == out_c

        def forward(self, x):
            h = self.body(x)
            return x + h if self.residual else h

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            c = make_divisible(32 * alpha)
            self.stem = nn.Sequential(ConvSame(in_c, c, stem_stride, 1), bn(c), nn.ReLU6())
            blocks = []
            for t, out, n, s in table:
                out = make_divisible(out * alpha)
                for i in range(n):
                    blocks.append(InvertedResidual(c, t, out, s if i == 0 else 1))
                    c = out
            self.blocks = nn.Sequential(*blocks)
            self.head = nn.Sequential(nn.Conv2d(c, last_c, 1, bias=False), bn(last_c), nn.ReLU6())
            self.logits = nn.Linear(last_c, classes)

        def forward(self, x):
            h = self.head(self.blocks(self.stem(x)))
            return self.logits(h.mean(dim=(2, 3)))

    return MobileNetV2()


def build_mobilenet_v2_small(torch):
    """28x28 stem stride 1, (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,2,1), 256."""
    return build_mobilenet_v2(torch, table=KERAS_BLOCKS[:3] + [(6, 64, 2, 1)])


def build_keras_mobilenet_v2(torch, classes=2):
    """tf.keras.applications.MobileNetV2(weights=None, classes=2) on 224x224x3 (width 1.0): the
    stride-2 stem, the whole block table, 1280 channels before the classifier."""
    return build_mobilenet_v2(torch, in_c=3, stem_stride=2, table=KERAS_BLOCKS, last_c=1280,
                              classes=classes)


def torch_worker(model_name, threads, layout, steps, repeats):
    """Runs in its own process: prints 'ms=... peak_rss_mb=... torch=...'."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = {"lenet": build_lenet, "mobilenet_v2_small": build_mobilenet_v2_small}[model_name](torch)
    x = torch.rand(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,))
    if layout == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux
    print(f"ms={1e3 * statistics.median(times):.3f} peak_rss_mb={peak_mb:.0f} "
          f"torch={torch.__version__}", flush=True)


def parse_pairs(line):
    name, *pairs = line.split()
    return name, {k: v for k, v in (p.split("=", 1) for p in pairs if "=" in p)}


def run_torch(model_name, threads, layout):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-worker", model_name,
                          str(threads), "--layout", layout],
                         check=True, capture_output=True, text=True).stdout
    _, kv = parse_pairs("torch " + out.strip().splitlines()[-1])
    return float(kv["ms"]), float(kv["peak_rss_mb"]), kv["torch"]


# --------------------------------------------------------------------------- placeflow side


def run_pf(binary, figure):
    proc = subprocess.run([binary, figure], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{binary} {figure} failed (rc {proc.returncode}): {proc.stderr.strip()}\n"
                 "build pf-bench first, or run with --torch-only")
    for line in proc.stdout.splitlines():
        name, kv = parse_pairs(line)
        if name == figure:
            return float(kv["ms"]), float(kv["peak_rss_mb"])
    sys.exit(f"{binary} {figure}: no '{figure}' line in:\n{proc.stdout}")


# ---------------------------------------------------------------------------------- driver


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pf_bench", nargs="?", default="build/tools/pf-bench")
    ap.add_argument("--torch-only", action="store_true", help="skip placeflow (pf-bench not built)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--layout", choices=["nchw", "channels_last"], default="channels_last",
                    help="PyTorch memory format (default channels_last, the faster here)")
    ap.add_argument("--torch-worker", nargs=2, metavar=("MODEL", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.torch_worker:
        torch_worker(args.torch_worker[0], int(args.torch_worker[1]), args.layout, steps=5,
                     repeats=5)
        return

    # samples[(side, model)] -> list of (ms, peak_rss_mb); side is "pf" or ("torch", threads).
    samples = {}
    version = None
    for r in range(args.rounds):
        jobs = []
        for figure, model in MODELS:
            pair = [("pf", figure, model)] if not args.torch_only else []
            pair += [(("torch", t), figure, model) for t in THREADS]
            jobs += pair if r % 2 == 0 else pair[::-1]  # A/B, then B/A
        for side, figure, model in jobs:
            if side == "pf":
                ms, rss = run_pf(args.pf_bench, figure)
            else:
                ms, rss, version = run_torch(model, side[1], args.layout)
            samples.setdefault((side, model), []).append((ms, rss))
        print(f"round {r + 1}/{args.rounds}: " + " ".join(
            f"{model}:{'pf' if s == 'pf' else 'torch' + str(s[1])}={v[-1][0]:.1f}ms"
            for (s, model), v in samples.items()), file=sys.stderr, flush=True)

    med = lambda xs: statistics.median(xs)
    print(f"pytorch_version {version} layout={args.layout} rounds={args.rounds} batch={BATCH}")
    for figure, model in MODELS:
        per_threads = {t: samples[(("torch", t), model)] for t in THREADS}
        t_ms = {t: med([m for m, _ in v]) for t, v in per_threads.items()}
        best = min(t_ms, key=t_ms.get)
        t_rss = med([s for _, s in per_threads[best]])
        all_threads = " ".join(f"threads{t}_ms={t_ms[t]:.2f}" for t in THREADS)
        print(f"torch_{figure} ms={t_ms[best]:.2f} threads={best} peak_rss_mb={t_rss:.0f} "
              f"examples/s={BATCH / t_ms[best] * 1e3:.0f} {all_threads}")
        if args.torch_only:
            continue
        pf = samples[("pf", model)]
        pf_ms, pf_rss = med([m for m, _ in pf]), med([s for _, s in pf])
        print(f"{figure} ms={pf_ms:.2f} peak_rss_mb={pf_rss:.0f} examples/s={BATCH / pf_ms * 1e3:.0f}")
        print(f"compare_{figure} torch_ms/placeflow_ms={t_ms[best] / pf_ms:.2f} "
              f"torch_rss/placeflow_rss={t_rss / pf_rss:.2f}")


if __name__ == "__main__":
    main()
