#!/usr/bin/env python3
"""mlp_seed000's training step on /gpu:0: placeflow (pf-bench mlp_seed000_step_gpu) beside PyTorch
eager on the same GPU, in one run.

    python3 tools/bench/compare_torch_gpu.py [path/to/pf-bench]

Needs a CUDA build of PyTorch and a GPU (the lent GPU machine has none of Debian's packages:
run it where torch.cuda.is_available()); without one it prints a "skipped" line. PyTorch is
used only here, never by placeflow. Figures are medians of 5 repeats of 10 steps, each repeat
ending with a device synchronisation. The inputs are pageable host tensors (as in the first GPU
run's bench.log).

tools/gpu_check.sh's bench step runs tools/bench/gpu_side_by_side.py instead: this figure (with
pinned inputs) beside lenet, mnist_mlp and cnn_seed004, interleaved with PyTorch in one call.
"""
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/tools/pf-bench"
    out = subprocess.run([binary, "mlp_seed000_step_gpu"], check=True, capture_output=True, text=True).stdout
    print(out, end="")
    try:
        import torch
    except ImportError:
        print("torch_mlp_seed000_step_gpu skipped=no_torch")
        return
    if not torch.cuda.is_available():
        print("torch_mlp_seed000_step_gpu skipped=no_cuda_torch")
        return
    dev = torch.device("cuda:0")
    torch.backends.cuda.matmul.allow_tf32 = False  # placeflow's float32 default
    g = torch.Generator().manual_seed(1)
    dims = [600, 512, 128, 128, 1]
    params = []
    for i in range(4):
        limit = (6.0 / (dims[i] + dims[i + 1])) ** 0.5
        params.append(((torch.rand(dims[i], dims[i + 1], generator=g) * 2 - 1) * limit).to(dev).requires_grad_())
        params.append(torch.zeros((), device=dev, requires_grad=True))
    x = torch.rand(2000, 600, generator=g)
    t = 2 * x + 1

    def step():
        # Inputs come from the host every step, as placeflow's feeds do.
        xd, td = x.to(dev, non_blocking=True), t.to(dev, non_blocking=True)
        h = xd
        for i in range(4):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 3:
                h = torch.relu(h)
        loss = ((h - td) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / 10)
    torch_ms = statistics.median(times) * 1e3
    print(f"torch_mlp_seed000_step_gpu ms_per_step={torch_ms:.3f} device={torch.cuda.get_device_name(0).replace(' ', '_')}")
    for line in out.splitlines():
        if line.startswith("mlp_seed000_step_gpu ") and "ms_per_step" in line:
            pf_ms = float(line.split("ms_per_step=")[1].split()[0])
            print(f"compare_mlp_seed000_step_gpu speedup_vs_torch={torch_ms / pf_ms:.2f}")


if __name__ == "__main__":
    main()
