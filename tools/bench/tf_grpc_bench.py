"""Peer benchmark: TensorFlow's own gRPC distributed runtime, for comparison with placeflow's figures.

    /opt/tfbench/bin/python tools/bench/tf_grpc_bench.py

TensorFlow (tensorflow-cpu in a venv outside the repo, /opt/tfbench) is used only here and is
never a dependency of placeflow. Two TF servers run in two child processes on free loopback
ports, cluster {"worker": [p0], "ps": [p1]}; a TF1 graph-mode session targets worker:0.

  grpc_recv_bandwidth: a 64 MiB float32 variable on /job:ps/task:0, reduce_sum of the whole
      tensor on /job:worker/task:0, so all 64 MiB cross per step. Reported raw (bytes / step
      time) and net (bytes / (step time - time of the same graph with everything on worker:0)).
  dist_step_overhead: scalar constant on ps:0, tf.add on worker:0, fetch the result; also
      reported for the same step all on worker:0 (client -> master gRPC round trip only).

Constant folding is turned off so the two-task graphs stay two-task; each figure is checked
with a traced run to have executed ops on both tasks.
"""
import os
import socket
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig  # noqa: E402

WORKER, PS = "/job:worker/task:0", "/job:ps/task:0"
NBYTES = 64 << 20


def cluster(p0, p1):
    return tf.train.ClusterSpec({"worker": [f"localhost:{p0}"], "ps": [f"localhost:{p1}"]})


def serve(job, task, p0, p1):
    server = tf.distribute.Server(cluster(p0, p1), job_name=job, task_index=int(task), protocol="grpc")
    server.join()


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def wait_listening(port, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("localhost", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"TF server on port {port} did not come up")


def session_config():
    config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.rewrite_options.constant_folding = RewriterConfig.OFF  # keep ps -> worker edge
    return config


def step_times(sess, fetch, warmup, runs):
    for _ in range(warmup):
        sess.run(fetch)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(fetch)
        times.append(time.perf_counter() - start)
    return times


def check_spans_both(sess, fetch):
    opts = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    meta = tf.compat.v1.RunMetadata()
    sess.run(fetch, options=opts, run_metadata=meta)
    devices = {d.device for d in meta.step_stats.dev_stats if d.node_stats}
    for job in ("/job:worker/", "/job:ps/"):
        if not any(d.startswith(job) for d in devices):
            raise RuntimeError(f"expected ops on {job}, traced devices: {sorted(devices)}")


def reduce_graph(var_device, n):
    with tf.device(var_device):
        v = tf.compat.v1.Variable(tf.ones([n], tf.float32), use_resource=True)
        value = v.read_value()
    with tf.device(WORKER):
        total = tf.reduce_sum(tf.identity(value))
    return v, total


def bench(target, runs_bw=15, runs_step=300):
    tf.compat.v1.disable_eager_execution()
    n = NBYTES // 4
    graph = tf.Graph()
    with graph.as_default():
        v_remote, sum_remote = reduce_graph(PS, n)
        v_local, sum_local = reduce_graph(WORKER, n)
        with tf.device(PS):
            c = tf.constant(1.0)
        with tf.device(WORKER):
            added = tf.add(c, 2.0)
            added_local = tf.add(tf.constant(1.0), 2.0)
    with tf.compat.v1.Session(target, graph=graph, config=session_config()) as sess:
        sess.run([v_remote.initializer, v_local.initializer])
        assert sess.run(sum_remote) == n and sess.run(added) == 3.0
        check_spans_both(sess, sum_remote)
        check_spans_both(sess, added)

        t_remote = statistics.median(step_times(sess, sum_remote, 3, runs_bw))
        t_local = statistics.median(step_times(sess, sum_local, 3, runs_bw))
        print(f"tf grpc_recv_bandwidth gbps={NBYTES / t_remote / 1e9:.3f} (median of {runs_bw}, 64 MiB)")
        net = f"{NBYTES / (t_remote - t_local) / 1e9:.3f}" if t_remote > t_local else "n/a"
        print(f"tf grpc_recv_bandwidth_net gbps={net} (median of {runs_bw}, 64 MiB, minus "
              f"all-on-worker step {t_local * 1e3:.2f} ms from {t_remote * 1e3:.2f} ms)")

        t_step = statistics.median(step_times(sess, added, 50, runs_step))
        print(f"tf dist_step_overhead us={t_step * 1e6:.1f} (median of {runs_step})")
        t_step_local = statistics.median(step_times(sess, added_local, 50, runs_step))
        print(f"tf dist_step_overhead_all_on_worker us={t_step_local * 1e6:.1f} (median of {runs_step}, "
              "same step with the constant on worker:0, still via the grpc session)")
    print(f"tf version {tf.__version__}")


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--server":
        return serve(*sys.argv[2:])
    p0, p1 = free_port(), free_port()
    procs = []
    try:
        for job, task in (("worker", "0"), ("ps", "0")):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--server", job, task, str(p0), str(p1)]))
        wait_listening(p0)
        wait_listening(p1)
        bench(f"grpc://localhost:{p0}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
