"""Peer benchmark: between-graph ps/worker training of pf-train's mnist_mlp in TensorFlow's
gRPC runtime (TF1 graph mode, tf.compat.v1), for comparison with `pf-train --local-cluster`.

    /opt/tfbench/bin/python tools/bench/tf_ps_bench.py --mode async|sync --ps 1 --workers 2

TensorFlow (tensorflow-cpu in a venv outside the repo, /opt/tfbench) is used only here and is
never a dependency of placeflow. The launcher picks free loopback ports and runs this script
once per task: ps tasks serve (server.join()) until killed, workers train and print
  tf mode=<m> workers=<M> task=<i> examples_per_s=<f> step_ms=<median> test_accuracy=<f>
then the launcher prints `tf mode=<m> workers=<M> total_examples_per_s=<sum over workers>`.

Mirrors models/models.cc BuildMnistMlp as pf-train trains it: x[?,784] in [0,1] -> dense 500
ReLU -> dense 10; Glorot-uniform weights, zero biases; loss = mean sparse softmax cross-entropy
+ 1e-4 * (l2_loss(w1) + l2_loss(w2)); SGD, lr 0.3 * 0.99^floor(global_step / 600) (staircase);
batch 100 per worker fed with feed_dict, each worker shuffling with its own seed (1 + task);
an ExponentialMovingAverage(0.99, num_updates=global_step) applied after each step, whose
averages give the test accuracy. Variables (global step and averages too) go on the ps via
replica_device_setter, the rest on /job:worker/task:i. --mode async: every worker applies its
own gradients; --mode sync: SyncReplicasOptimizer(replicas_to_aggregate = total_num_replicas =
workers) with its session hook (chief init, tokens, chief queue runner) in a
MonitoredTrainingSession.

Threads: every task's server and sessions use intra_op_parallelism_threads=--intra (default 1)
and inter_op_parallelism_threads=--inter (default 2): with a ps and 1-2 workers on 2 cores,
splitting single ops brought nothing (--intra 2 measured no faster), while two ops may run at
once. placeflow's tasks use their default pool, one thread per core shared by ops and shards.
Timing: each worker runs --steps local steps; the first --warmup (20) are left out; a step is
one batch gather plus one sess.run([train_op, loss]). Sync mode: a worker that is done goes
on with untimed steps until every worker is done (a worker left alone can wait forever for a
token once stale gradients were dropped). Start-up, test accuracy and teardown are not timed.
"""
import argparse
import gzip
import os
import socket
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402

DATA_DIRS = ("/work/shared/data/mnist", "/usr/share/datasets/fashion-mnist")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=("async", "sync"), default="async")
    p.add_argument("--ps", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--steps", type=int, default=300, help="steps per worker")
    p.add_argument("--warmup", type=int, default=20, help="first steps left out of the timing")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--steps-per-epoch", type=int, default=600, help="learning-rate decay period")
    p.add_argument("--data", help="MNIST IDX .gz files; default: " + ", else ".join(DATA_DIRS))
    p.add_argument("--intra", type=int, default=1, help="intra_op_parallelism_threads")
    p.add_argument("--inter", type=int, default=2, help="inter_op_parallelism_threads")
    # Set by the launcher for each task.
    p.add_argument("--job", choices=("ps", "worker"))
    p.add_argument("--task", type=int, default=0)
    p.add_argument("--ps-hosts")
    p.add_argument("--worker-hosts")
    return p.parse_args(argv)


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * d:8 + 4 * d], "big") for d in range(rank)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * rank).reshape(dims)


def load_mnist(data_dir, split):
    images = load_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = load_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    return images.reshape(len(images), -1).astype(np.float32) / 255.0, labels.astype(np.int32)


def tf_setup(a):
    import tensorflow as tf
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    cluster = tf.train.ClusterSpec({"ps": a.ps_hosts.split(","), "worker": a.worker_hosts.split(",")})
    config = v1.ConfigProto(intra_op_parallelism_threads=a.intra, inter_op_parallelism_threads=a.inter)
    if a.job == "worker":  # this worker's sessions need only the ps tasks and itself
        config.device_filters.extend(["/job:ps", f"/job:worker/task:{a.task}"])
    server = tf.distribute.Server(cluster, job_name=a.job, task_index=a.task, config=config)
    return tf, v1, cluster, config, server


def build(tf, v1, a, cluster):
    worker_device = f"/job:worker/task:{a.task}"
    with v1.device(v1.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        x = v1.placeholder(tf.float32, [None, 784], name="x-input")
        y = v1.placeholder(tf.int32, [None], name="y-input")
        global_step = v1.train.get_or_create_global_step()
        glorot, zeros = v1.glorot_uniform_initializer(), v1.zeros_initializer()
        w1 = v1.get_variable("layer1/w", [784, 500], initializer=glorot)
        b1 = v1.get_variable("layer1/b", [500], initializer=zeros)
        w2 = v1.get_variable("layer2/w", [500, 10], initializer=glorot)
        b2 = v1.get_variable("layer2/b", [10], initializer=zeros)

        def logits(w1, b1, w2, b2):
            return tf.nn.bias_add(tf.matmul(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1)), w2), b2)

        xent = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits(w1, b1, w2, b2)))
        loss = xent + 1e-4 * (tf.nn.l2_loss(w1) + tf.nn.l2_loss(w2))
        lr = v1.train.exponential_decay(0.3, global_step, a.steps_per_epoch, 0.99, staircase=True)
        opt = v1.train.GradientDescentOptimizer(lr)
        if a.mode == "sync":
            opt = v1.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=a.workers, total_num_replicas=a.workers)
        step = opt.minimize(loss, global_step=global_step)
        ema = v1.train.ExponentialMovingAverage(0.99, num_updates=global_step)
        with tf.control_dependencies([step]):
            train_op = ema.apply(v1.trainable_variables())
        avg = logits(*(ema.average(v) for v in (w1, b1, w2, b2)))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(avg, 1, output_type=tf.int32), y), tf.float32))
        done = v1.get_variable("workers_done", [], tf.int32, zeros, trainable=False)
    return dict(x=x, y=y, loss=loss, train_op=train_op, accuracy=accuracy, done=done,
                mark_done=done.assign_add(1), opt=opt)


def train(a):
    tf, v1, cluster, config, server = tf_setup(a)
    if a.job == "ps":
        server.join()
        return
    data_dir = a.data or next((d for d in DATA_DIRS if os.path.isdir(d)), DATA_DIRS[0])
    train_x, train_y = load_mnist(data_dir, "train")
    test_x, test_y = load_mnist(data_dir, "t10k")
    m = build(tf, v1, a, cluster)
    is_chief = a.task == 0
    hooks = [m["opt"].make_session_run_hook(is_chief)] if a.mode == "sync" else []
    if not is_chief:
        # A non-chief MonitoredTrainingSession that finds the variables uninitialised sleeps
        # 30 s before looking again: wait for the chief here instead.
        uninit = v1.report_uninitialized_variables(v1.global_variables())
        with v1.Session(server.target, config=config) as s:
            while len(s.run(uninit)):
                time.sleep(0.1)
    sess = v1.train.MonitoredTrainingSession(
        master=server.target, is_chief=is_chief, config=config, hooks=hooks, checkpoint_dir=None,
        save_checkpoint_secs=None, save_summaries_steps=None, save_summaries_secs=None,
        log_step_count_steps=0, stop_grace_period_secs=1)
    rng = np.random.RandomState(1 + a.task)
    per_epoch = len(train_x) // a.batch
    times = []
    for i in range(a.steps):
        if i % per_epoch == 0:
            order = rng.permutation(len(train_x))
        t0 = time.perf_counter()
        idx = order[(i % per_epoch) * a.batch:(i % per_epoch + 1) * a.batch]
        sess.run([m["train_op"], m["loss"]], {m["x"]: train_x[idx], m["y"]: train_y[idx]})
        times.append(time.perf_counter() - t0)
    timed = times[a.warmup:]
    sess.run(m["mark_done"])
    if a.mode == "sync":
        # Sync: go on (untimed) until every worker is done, as a worker left alone can wait
        # forever for a token; the last of these steps may wait for a partner already gone.
        try:
            while sess.run(m["done"]) < a.workers:
                sess.run(m["train_op"], {m["x"]: train_x[idx], m["y"]: train_y[idx]},
                         options=v1.RunOptions(timeout_in_ms=2000))
        except tf.errors.DeadlineExceededError:
            pass
    accuracy = sess.run(m["accuracy"], {m["x"]: test_x, m["y"]: test_y})
    print(f"tf mode={a.mode} workers={a.workers} task={a.task} "
          f"examples_per_s={len(timed) * a.batch / sum(timed):.1f} "
          f"step_ms={1e3 * statistics.median(timed):.3f} test_accuracy={accuracy:.4f}", flush=True)
    sess.close()


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def launch(a, argv):
    ports = free_ports(a.ps + a.workers)
    hosts = [f"127.0.0.1:{p}" for p in ports]
    common = [sys.executable, os.path.abspath(__file__), *argv,
              "--ps-hosts", ",".join(hosts[:a.ps]), "--worker-hosts", ",".join(hosts[a.ps:])]
    ps = [subprocess.Popen(common + ["--job", "ps", "--task", str(i)]) for i in range(a.ps)]
    workers = [subprocess.Popen(common + ["--job", "worker", "--task", str(i)],
                                stdout=subprocess.PIPE, text=True) for i in range(a.workers)]
    total, failed = 0.0, False
    try:
        for w in workers:
            out, _ = w.communicate()
            sys.stdout.write(out)
            failed |= w.returncode != 0
            for line in out.splitlines():
                if line.startswith("tf mode="):
                    total += float(line.split("examples_per_s=")[1].split()[0])
    finally:
        for p in ps + workers:
            if p.poll() is None:
                p.kill()
            p.wait()
    if failed:
        sys.exit("tf_ps_bench: a worker failed")
    print(f"tf mode={a.mode} workers={a.workers} total_examples_per_s={total:.1f}", flush=True)


def main():
    a = parse_args(sys.argv[1:])
    if a.job:
        train(a)
    else:
        launch(a, sys.argv[1:])


if __name__ == "__main__":
    main()
