#!/usr/bin/python3
"""Side by side: placeflow (pf-bench) and PyTorch eager on the same models, in one run.

    /usr/bin/python3 tools/bench/compare_torch.py [path/to/pf-bench]   # Debian's python, where python3-torch is

PyTorch is Debian's python3-torch, used only here (never a dependency of placeflow). For
PyTorch the better of 1 and 2 intra-op threads is reported. Figures are medians of 5 repeats.
"""
import statistics
import subprocess
import sys
import time

import torch


def median_seconds(fn, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_seed000_step():
    """mlp_seed000: 600-512-128-128-1, ReLU, scalar biases, MSE against [2000, 600] targets, SGD."""
    g = torch.Generator().manual_seed(1)
    dims = [600, 512, 128, 128, 1]
    params = []
    for i in range(4):
        limit = (6.0 / (dims[i] + dims[i + 1])) ** 0.5
        w = ((torch.rand(dims[i], dims[i + 1], generator=g) * 2 - 1) * limit).requires_grad_()
        b = torch.zeros((), requires_grad=True)
        params += [w, b]
    x = torch.rand(2000, 600, generator=g)
    t = 2 * x + 1

    def step():
        h = x
        for i in range(4):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 3:
                h = torch.relu(h)
        loss = ((h - t) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad

    for _ in range(3):
        step()
    return median_seconds(lambda: [step() for _ in range(10)]) / 10


def torch_mnist_epoch():
    """mnist_mlp: 784-500-10, ReLU, sparse softmax cross-entropy + L2, SGD, moving averages."""
    g = torch.Generator().manual_seed(1)
    w1 = ((torch.rand(784, 500, generator=g) * 2 - 1) * 0.077).requires_grad_()
    b1 = torch.zeros(500, requires_grad=True)
    w2 = ((torch.rand(500, 10, generator=g) * 2 - 1) * 0.108).requires_grad_()
    b2 = torch.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]
    shadows = [p.detach().clone() for p in params]
    batches = [(torch.randint(0, 256, (100, 784), generator=g).float() / 255, torch.randint(0, 10, (100,), generator=g))
               for _ in range(20)]

    def step(x, y):
        logits = torch.relu(x @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, y) + 1e-4 * 0.5 * ((w1 ** 2).sum() + (w2 ** 2).sum())
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.3 * p.grad
            for s, p in zip(shadows, params):
                s.mul_(0.99).add_(p, alpha=0.01)

    for i in range(20):
        step(*batches[i])
    seconds = median_seconds(lambda: [step(*batches[i % 20]) for i in range(600)])
    return 60000 / seconds


def best_of_threads(fn, higher_is_better):
    results = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        results[threads] = fn()
    pick = max if higher_is_better else min
    best = pick(results, key=results.get)
    return results[best], best


def pf_figures(binary):
    out = subprocess.run([binary, "mlp_seed000_step", "mnist_mlp_epoch"], check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in out.splitlines():
        name, *pairs = line.split()
        figures[name] = {k: float(v) for k, v in (p.split("=") for p in pairs)}
    return figures, out


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/tools/pf-bench"
    figures, raw = pf_figures(binary)
    print(raw, end="")
    pf_step = figures["mlp_seed000_step"]["ms_per_step"]
    gemm = figures["mlp_seed000_step"]["gemm_only_ms"]
    torch_step, step_threads = best_of_threads(torch_seed000_step, higher_is_better=False)
    print(f"torch_mlp_seed000_step ms_per_step={torch_step * 1e3:.3f} threads={step_threads}")
    print(f"compare_mlp_seed000_step speedup_vs_torch={torch_step * 1e3 / pf_step:.2f} ratio_to_gemm={pf_step / gemm:.2f}")
    pf_eps = figures["mnist_mlp_epoch"]["examples_per_s"]
    torch_eps, eps_threads = best_of_threads(torch_mnist_epoch, higher_is_better=True)
    print(f"torch_mnist_mlp_epoch examples_per_s={torch_eps:.0f} threads={eps_threads}")
    print(f"compare_mnist_mlp_epoch speedup_vs_torch={pf_eps / torch_eps:.2f}")


if __name__ == "__main__":
    main()
