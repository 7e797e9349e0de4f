#!/usr/bin/env python3
"""Reads placeflow's TensorBoard event files with TensorBoard's (or TensorFlow's) own reader.

  tools/tensorboard_check.py LOGDIR [--expect-scalars loss,step_time_ms] [--expect-steps N]
                                    [--expect-graph-devices 2]

Prints every scalar tag with its steps and last value, the histogram tags, the image tags, the
graph's nodes per device and the run-metadata tags, as TensorBoard loads them. Checks what the
--expect flags ask for. Exit status: 0 read and as expected, 1 not as expected (or the reader
failed), 4 neither tensorboard nor tensorflow can be imported (a skip: ctest reports it so).
"""
import argparse
import collections
import glob
import os
import sys


def load_with_tensorboard(logdir):
    from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402

    acc = ea.EventAccumulator(
        logdir,
        size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0},
    )
    acc.Reload()
    tags = acc.Tags()
    scalars = {}
    for tag in tags.get(ea.SCALARS, []):
        scalars[tag] = [(e.step, e.value) for e in acc.Scalars(tag)]
    # TensorBoard >= 2 turns v1 simple_value summaries into scalar tensors.
    for tag in tags.get(ea.TENSORS, []):
        import numpy as np  # noqa: E402
        from tensorboard.util import tensor_util  # noqa: E402

        events = acc.Tensors(tag)
        values = [tensor_util.make_ndarray(e.tensor_proto) for e in events]
        if values and all(np.ndim(v) == 0 for v in values):
            scalars[tag] = [(e.step, float(v)) for e, v in zip(events, values)]
    histograms = sorted(tags.get(ea.HISTOGRAMS, []))
    images = sorted(tags.get(ea.IMAGES, []))
    graph = acc.Graph() if tags.get("graph") else None
    run_metadata = sorted(tags.get(ea.RUN_METADATA, []))
    return "tensorboard.EventAccumulator", scalars, histograms, images, graph, run_metadata


def load_with_tensorflow(logdir):
    import tensorflow as tf  # noqa: E402
    from tensorflow.core.framework import graph_pb2  # noqa: E402

    scalars = collections.defaultdict(list)
    histograms, images, run_metadata = set(), set(), set()
    graph = None
    for path in sorted(glob.glob(os.path.join(logdir, "*tfevents*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            if event.HasField("graph_def"):
                graph = graph_pb2.GraphDef()
                graph.ParseFromString(event.graph_def)
            if event.HasField("tagged_run_metadata"):
                run_metadata.add(event.tagged_run_metadata.tag)
            for v in event.summary.value:
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    scalars[v.tag].append((event.step, v.simple_value))
                elif kind == "histo":
                    histograms.add(v.tag)
                elif kind == "image":
                    images.add(v.tag)
    return ("tf.compat.v1.train.summary_iterator", dict(scalars), sorted(histograms),
            sorted(images), graph, sorted(run_metadata))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logdir")
    p.add_argument("--expect-scalars", default="")
    p.add_argument("--expect-steps", type=int, default=0)
    p.add_argument("--expect-graph-devices", type=int, default=0)
    p.add_argument("--expect-histograms", action="store_true")
    a = p.parse_args()
    try:
        import tensorboard  # noqa: F401,E402
        loader = load_with_tensorboard
    except ImportError:
        try:
            import tensorflow  # noqa: F401,E402
            loader = load_with_tensorflow
        except ImportError:
            print("SKIP: neither tensorboard nor tensorflow can be imported by " + sys.executable +
                  " (pip install tensorboard, or set PF_TB_PYTHON to a python that has it)")
            return 4
    reader, scalars, histograms, images, graph, run_metadata = loader(a.logdir)
    print("reader: " + reader)
    for tag in sorted(scalars):
        points = scalars[tag]
        print("scalar %-20s %4d points, steps %d..%d, last %.6g" %
              (tag, len(points), points[0][0], points[-1][0], points[-1][1]))
    print("histograms: " + ", ".join(histograms))
    print("images: " + ", ".join(images))
    devices = collections.Counter(n.device for n in graph.node) if graph is not None else {}
    print("graph: %d nodes; by device: %s" %
          (len(graph.node) if graph is not None else 0, dict(devices)))
    print("run metadata: " + ", ".join(run_metadata))
    ok = True
    for tag in filter(None, a.expect_scalars.split(",")):
        if tag not in scalars:
            print("MISSING scalar tag " + tag)
            ok = False
        elif a.expect_steps and len(scalars[tag]) != a.expect_steps:
            print("scalar %s has %d points, expected %d" % (tag, len(scalars[tag]), a.expect_steps))
            ok = False
    # Nodes the session placed carry a full device name (/job:...); fed placeholders and nodes
    # no fetch needs (the gradient with respect to the input, an unused concat) are never placed
    # and keep what they asked for, possibly nothing.
    assigned = {d for d in devices if d.startswith("/job:")}
    if a.expect_graph_devices and len(assigned) != a.expect_graph_devices:
        print("graph has %d assigned devices, expected %d" % (len(assigned), a.expect_graph_devices))
        ok = False
    if a.expect_histograms and not histograms:
        print("no histograms")
        ok = False
    print("OK" if ok else "NOT AS EXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
