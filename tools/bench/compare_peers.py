#!/usr/bin/env python3
"""The peers' side of compare.py: one figure, one side, one thread setting per process.

    PYTHON compare_peers.py tf FIGURE,... --intra N --inter N
    PYTHON compare_peers.py torch FIGURE,... --threads N [--compile]

Prints one line per figure, "FIGURE variant=V value=X version=..." (the unit is compare.py's
business); TF's mnist_mlp_epoch prints two, variant feed and const. Thread settings are per
process (TF sizes its global pools from the first session), so compare.py starts one process per
setting. Each figure
builds the graph pf-bench builds (tools/pf_bench.cc, models/models.cc, models/cnn_models.cc) and
times it the way pf-bench does: warm-up steps, then the median of 5 repeats of a block of runs.
TensorFlow runs tf.compat.v1 graph mode; PyTorch runs eager (torch.compile where asked).
"""
import argparse
import os
import statistics
import sys
import time

REPEATS = 5
SEED = 1
FIGURES = ["mlp_seed000_step", "mnist_mlp_epoch", "executor_chain", "executor_wide",
           "session_run_overhead", "conv_lenet_step", "peak_rss", "input_pipeline", "while_loop", "lstm_step",
           "image_folder", "mobilenet_v2_step"]


def median_seconds(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def seed_batch(np, batch=2000):
    """models::SeedBatch's shape and relation: x uniform in [0, 1), target = 2x + 1."""
    x = np.random.default_rng(SEED).random((batch, 600), dtype=np.float32)
    return x, 2 * x + 1


def mnist_batches(np):
    """pf-bench mnist_mlp_epoch's data: 20 batches of 100 pixels in [0, 1] and labels in [0, 10)."""
    rng = np.random.default_rng(SEED)
    return [((rng.integers(0, 256, (100, 784)) / 255.0).astype(np.float32),
             rng.integers(0, 10, (100,)).astype(np.int32)) for _ in range(20)]


def lenet_batch(np, batch=128, features=784, classes=10):
    """cnn_bench.cc's fixed batch: x[i] = (i * 7919 % 256) / 255, y[i] = i % classes."""
    i = np.arange(batch * features, dtype=np.int64)
    x = ((i * 7919 % 256) / 255.0).astype(np.float32).reshape(batch, features)
    return x, (np.arange(batch) % classes).astype(np.int32)


# mobilenet_v2_step: Keras's MobileNetV2 (width 1.0) on 224x224x3, 2 classes, batch 8.
MOBILENET_BATCH, MOBILENET_SIZE = 8, 224


# ------------------------------------------------------------------------------ TensorFlow


class Tf:
    def __init__(self, intra, inter):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # lstm_step's tf.compat.v1.nn.rnn_cell needs Keras 2 (`pip install tf_keras`): TF 2.16+
        # ships Keras 3, which has no v1 RNN cells.
        import importlib.util
        if importlib.util.find_spec("tf_keras") is not None:
            os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
        import numpy as np
        import tensorflow as tf

        tf.compat.v1.disable_eager_execution()
        self.np, self.tf, self.v1 = np, tf, tf.compat.v1
        self.intra, self.inter = intra, inter

    def session(self, graph, optimize=True):
        """optimize=False: no grappler and no classic constant folding. The executor figures
        need it: on constant inputs TF would fold the whole chain into one constant, and its
        arithmetic optimizer cancels Neg(Neg(x)); placeflow folds nothing."""
        c = self.v1.ConfigProto(intra_op_parallelism_threads=self.intra,
                                inter_op_parallelism_threads=self.inter,
                                device_count={"GPU": 0})
        if not optimize:
            c.graph_options.rewrite_options.disable_meta_optimizer = True
            c.graph_options.optimizer_options.opt_level = self.v1.OptimizerOptions.L0
            c.graph_options.optimizer_options.do_constant_folding = False
        return self.v1.Session(graph=graph, config=c)

    def glorot(self, salt):
        return self.v1.glorot_uniform_initializer(seed=SEED * 1000 + salt)

    def seed_mlp(self):
        """mlp_seed000: 600-512-128-128-1, ReLU, scalar biases, MSE against a [batch, 600]
        target broadcast against y [batch, 1], SGD 0.01 with a global step."""
        v1, tf = self.v1, self.tf
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, 600], name="input")
            t = v1.placeholder(tf.float32, [None, 600], name="target")
            h = x
            dims = [600, 512, 128, 128, 1]
            for i, salt in enumerate([0, 1, 2, 9]):
                with v1.variable_scope("affine%d" % i if i < 3 else "affine_last"):
                    w = v1.get_variable("w", [dims[i], dims[i + 1]], initializer=self.glorot(salt))
                    b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
                h = tf.matmul(h, w) + b
                if i < 3:
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(tf.square(h - t), name="loss")
            gs = v1.train.get_or_create_global_step()
            train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=gs)
            init = v1.global_variables_initializer()
        sess = self.session(g)
        sess.run(init)
        return sess, x, t, loss, train

    def mlp_seed000_step(self, variant):
        sess, x, t, _, train = self.seed_mlp()
        xs, ts = seed_batch(self.np)
        feed = {x: xs, t: ts}
        for _ in range(3):
            sess.run(train, feed)
        return median_seconds(lambda: [sess.run(train, feed) for _ in range(10)]) / 10 * 1e3

    def peak_rss(self, variant):
        """50 steps of pf-train --model mlp_seed000 (batch 2000, the loss fetched each step)."""
        sess, x, t, loss, train = self.seed_mlp()
        xs, ts = seed_batch(self.np)
        for _ in range(50):
            value, _ = sess.run([loss, train], {x: xs, t: ts})
        return float(value)

    def mnist_mlp_epoch(self, variant):
        """mnist_mlp: 784-500-10, ReLU, sparse softmax cross-entropy + 1e-4 * L2 of the weights,
        SGD 0.3 decayed 0.99 per 600 steps (staircase), then moving averages (0.99, global step)
        of the trainable variables. variant feed: the batch is fed each step; const: the 20
        batches are a graph constant and only the batch index is fed."""
        np, tf, v1 = self.np, self.tf, self.v1
        batches = mnist_batches(np)
        g = tf.Graph()
        with g.as_default():
            if variant == "const":
                idx = v1.placeholder(tf.int32, [], name="batch_index")
                x = tf.gather(tf.constant(np.stack([b[0] for b in batches])), idx)
                y = tf.gather(tf.constant(np.stack([b[1] for b in batches])), idx)
            else:
                x = v1.placeholder(tf.float32, [None, 784], name="x-input")
                y = v1.placeholder(tf.int32, [None], name="y-input")

            def dense(name, h, n_in, n_out, salt, relu):
                with v1.variable_scope(name):
                    w = v1.get_variable("w", [n_in, n_out], initializer=self.glorot(salt))
                    b = v1.get_variable("b", [n_out], initializer=v1.zeros_initializer())
                out = tf.nn.bias_add(tf.matmul(h, w), b)
                return (tf.nn.relu(out) if relu else out), w

            h, w1 = dense("layer1", x, 784, 500, 1, True)
            logits, w2 = dense("layer2", h, 500, 10, 2, False)
            xent = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            l2 = 1e-4 * tf.add_n([tf.nn.l2_loss(w1), tf.nn.l2_loss(w2)])
            loss = tf.add_n([l2, xent], name="loss")
            gs = v1.train.get_or_create_global_step()
            lr = v1.train.exponential_decay(0.3, gs, 600, 0.99, staircase=True)
            step = v1.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)
            ema = v1.train.ExponentialMovingAverage(0.99, gs)
            with tf.control_dependencies([step]):
                average = ema.apply(v1.trainable_variables())
            train = tf.group(step, average, name="train")
            init = v1.global_variables_initializer()
        sess = self.session(g)
        sess.run(init)
        if variant == "const":
            feeds = [{idx: i} for i in range(20)]
        else:
            feeds = [{x: bx, y: by} for bx, by in batches]
        for i in range(20):
            sess.run(train, feeds[i])
        epoch = median_seconds(lambda: [sess.run(train, feeds[i % 20]) for i in range(600)])
        return 60000 / epoch

    def executor_chain(self, variant):
        tf = self.tf
        g = tf.Graph()
        with g.as_default():
            x = tf.constant(1.0)
            for _ in range(10000):
                x = tf.negative(x)
        sess = self.session(g, optimize=False)
        sess.run(x)
        return median_seconds(lambda: [sess.run(x) for _ in range(10)]) / 10 / 10000 * 1e6

    def executor_wide(self, variant):
        tf = self.tf
        g = tf.Graph()
        with g.as_default():
            ends = []
            for _ in range(8):
                h = tf.constant(self.np.zeros(4096, self.np.float32))
                for _ in range(40):
                    h = tf.tanh(h)
                ends.append(h)
            total = tf.add_n(ends)
        sess = self.session(g, optimize=False)
        sess.run(total)
        return median_seconds(lambda: [sess.run(total) for _ in range(20)]) / 20 * 1e3

    def session_run_overhead(self, variant):
        tf = self.tf
        g = tf.Graph()
        with g.as_default():
            y = tf.negative(tf.constant(1.0))
        sess = self.session(g, optimize=False)
        sess.run(y)
        runs = 2000  # pf-bench runs 20,000; a Python sess.run is ~50x slower
        return median_seconds(lambda: [sess.run(y) for _ in range(runs)]) / runs * 1e6

    def conv_lenet_step(self, variant):
        """lenet at batch 128: conv 5x5x32 SAME + bias + ReLU, max pool 2x2, conv 5x5x64, pool,
        dense 512 ReLU, dropout 0.4, dense 10; sparse softmax cross-entropy; Adam 1e-3 decayed
        0.9 per 600 steps (staircase)."""
        np, tf, v1 = self.np, self.tf, self.v1
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, 784], name="x-input")
            y = v1.placeholder(tf.int32, [None], name="y-input")

            def var(name, shape, salt):
                return (v1.get_variable(name + "/kernel", shape, initializer=self.glorot(salt)),
                        v1.get_variable(name + "/bias", shape[-1:],
                                        initializer=v1.zeros_initializer()))

            def conv(name, h, cin, cout, salt):
                w, b = var(name, [5, 5, cin, cout], salt)
                return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w, 1, "SAME"), b))

            def pool(h):
                return tf.nn.max_pool2d(h, 2, 2, "VALID")

            h = pool(conv("conv1", tf.reshape(x, [-1, 28, 28, 1]), 1, 32, 1))
            h = tf.reshape(pool(conv("conv2", h, 32, 64, 2)), [-1, 7 * 7 * 64])
            w, b = var("fc1", [7 * 7 * 64, 512], 3)
            h = tf.nn.dropout(tf.nn.relu(tf.matmul(h, w) + b), rate=0.4, seed=SEED * 1000 + 4)
            w, b = var("logits", [512, 10], 5)
            logits = tf.matmul(h, w) + b
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            gs = v1.train.get_or_create_global_step()
            lr = v1.train.exponential_decay(1e-3, gs, 600, 0.9, staircase=True)
            train = v1.train.AdamOptimizer(lr).minimize(loss, global_step=gs)
            init = v1.global_variables_initializer()
        sess = self.session(g)
        sess.run(init)
        xs, ys = lenet_batch(np)
        feed = {x: xs, y: ys}
        for _ in range(3):
            sess.run(train, feed)
        return median_seconds(lambda: [sess.run(train, feed) for _ in range(5)]) / 5 * 1e3

    def mobilenet_v2_step(self, variant):
        """ms per training step of Keras's MobileNetV2 (width 1.0, 224x224x3, 2 classes) at
        batch 8, built from tf.nn ops as models/cnn_models.cc builds it: convolutions without
        bias, fused batch norm (epsilon 1e-3, running averages updated with the step), ReLU6,
        global average pool, dense; sparse softmax cross-entropy; Adam 1e-3."""
        np, tf, v1 = self.np, self.tf, self.v1
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from compare_cnn_torch import KERAS_BLOCKS, make_divisible

        g = tf.Graph()
        updates = []
        salt = [0]

        def var(name, shape):
            salt[0] += 1
            return v1.get_variable(name, shape, initializer=self.glorot(salt[0]))

        def bn(name, h, relu6):
            c = h.shape[-1]
            with v1.variable_scope(name):
                gamma = v1.get_variable("gamma", [c], initializer=v1.ones_initializer())
                beta = v1.get_variable("beta", [c], initializer=v1.zeros_initializer())
                mean = v1.get_variable("moving_mean", [c], initializer=v1.zeros_initializer(),
                                       trainable=False)
                var_ = v1.get_variable("moving_variance", [c], trainable=False,
                                       initializer=v1.ones_initializer())
            y, m, v = v1.nn.fused_batch_norm(h, gamma, beta, mean, var_, epsilon=1e-3,
                                             is_training=True, exponential_avg_factor=0.1)
            updates.extend([v1.assign(mean, m), v1.assign(var_, v)])
            return tf.nn.relu6(y) if relu6 else y

        def conv(name, h, c_out, k=1, stride=1, relu6=True):
            w = var(name + "/kernel", [k, k, h.shape[-1], c_out])
            return bn(name + "_bn", tf.nn.conv2d(h, w, stride, "SAME"), relu6)

        def depthwise(name, h, stride):
            w = var(name + "/depthwise_kernel", [3, 3, h.shape[-1], 1])
            return bn(name + "_bn", tf.nn.depthwise_conv2d(h, w, [1, stride, stride, 1], "SAME"),
                      True)

        size = MOBILENET_SIZE
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, size * size * 3], name="x-input")
            y = v1.placeholder(tf.int32, [None], name="y-input")
            h = conv("Conv1", tf.reshape(x, [-1, size, size, 3]), make_divisible(32), 3, 2)
            block = 0
            for t, c, n, s in KERAS_BLOCKS:
                for i in range(n):
                    name, inp = f"block_{block}", h
                    if t != 1:
                        h = conv(name + "_expand", h, h.shape[-1] * t)
                    h = depthwise(name + "_depthwise", h, s if i == 0 else 1)
                    h = conv(name + "_project", h, make_divisible(c), relu6=False)
                    if (s if i == 0 else 1) == 1 and inp.shape[-1] == h.shape[-1]:
                        h = inp + h
                    block += 1
            h = tf.reduce_mean(conv("Conv_1", h, 1280), axis=[1, 2])
            logits = tf.matmul(h, var("Logits/kernel", [1280, 2])) + v1.get_variable(
                "Logits/bias", [2], initializer=v1.zeros_initializer())
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            with tf.control_dependencies(updates):
                train = v1.train.AdamOptimizer(1e-3).minimize(loss)
            init = v1.global_variables_initializer()
        sess = self.session(g)
        sess.run(init)
        xs, ys = lenet_batch(np, MOBILENET_BATCH, size * size * 3, 2)
        feed = {x: xs, y: ys}
        for _ in range(3):
            sess.run(train, feed)
        return median_seconds(lambda: [sess.run(train, feed) for _ in range(5)]) / 5 * 1e3

    def while_loop(self, variant):
        """µs per iteration of tf.compat.v1.while_loop adding 1 to a scalar, 100,000 times
        (pf-bench while_loop's twin; issue 35's goal)."""
        tf = self.tf
        g = tf.Graph()
        with g.as_default():
            n = self.v1.placeholder(tf.int32, [])
            out = self.v1.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
        sess = self.session(g, optimize=False)
        sess.run(out, {n: 100})
        return median_seconds(lambda: sess.run(out, {n: 100000}), repeats=5) / 100000 * 1e6

    def lstm_step(self, variant):
        """ms per forward and backward pass of tf.compat.v1.nn.dynamic_rnn over an LSTMCell of
        128 units, batch 64, 28 steps of 28 features (pf-bench lstm_step's twin)."""
        tf, v1 = self.tf, self.v1
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [64, 28, 28])
            cell = v1.nn.rnn_cell.LSTMCell(128, forget_bias=1.0)
            out, _ = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
            loss = tf.reduce_mean(tf.square(out))
            grads = v1.gradients(loss, v1.trainable_variables())
            init = v1.global_variables_initializer()
        sess = self.session(g)
        sess.run(init)
        batch = (self.np.arange(64 * 28 * 28) * 7919 % 256 / 255.0).astype(
            self.np.float32).reshape(64, 28, 28)
        sess.run(grads, {x: batch})
        return median_seconds(lambda: [sess.run(grads, {x: batch}) for _ in range(10)]) / 10 * 1e3

    def input_pipeline(self, variant):
        """examples/s of pf-bench input_pipeline's tf.data twin on the same TFRecord file (which
        pf-bench input_pipeline writes; $PF_BENCH_TFRECORD or /tmp/pf_bench_input_pipeline.tfrecord):
        TFRecordDataset -> shuffle(10000, seed) -> batch(100) -> map(parse_example + decode_raw,
        num_parallel_calls=2) -> prefetch(2), every batch pulled through a v1 Session."""
        tf = self.tf
        path = os.environ.get("PF_BENCH_TFRECORD", "/tmp/pf_bench_input_pipeline.tfrecord")
        if not os.path.exists(path):
            sys.exit(f"compare_peers.py: {path} is missing: run pf-bench input_pipeline first")
        features = {"image_raw": tf.io.FixedLenFeature([], tf.string),
                    "label": tf.io.FixedLenFeature([], tf.int64)}

        def parse(serialized):
            p = tf.io.parse_example(serialized, features)
            images = tf.cast(tf.io.decode_raw(p["image_raw"], tf.uint8), tf.float32) / 255.0
            return images, tf.cast(p["label"], tf.int32)

        return self.dataset_rate(
            lambda: (tf.data.TFRecordDataset(path).shuffle(10000, seed=SEED).batch(100)
                     .map(parse, num_parallel_calls=2).prefetch(2)))

    def dataset_rate(self, make_dataset):
        """Elements per second of one pass over make_dataset()'s (x, y) batches, each pulled
        through a v1 Session (one warm-up pass, then the median of the timed ones)."""
        tf, v1 = self.tf, self.v1
        g = tf.Graph()
        with g.as_default():
            it = v1.data.make_initializable_iterator(make_dataset())
            x, y = it.get_next()
        sess = self.session(g)
        count = [0]

        def epoch():
            sess.run(it.initializer)
            count[0] = 0
            try:
                while True:
                    count[0] += sess.run(y).shape[0]
            except tf.errors.OutOfRangeError:
                pass

        epoch()
        return count[0] / median_seconds(epoch)

    def image_folder(self, variant):
        """images/s of pf-bench image_folder's twin on the same folder ($PF_BENCH_IMAGES or
        /tmp/pf_bench_images, which pf-bench image_folder writes): Keras's
        image_dataset_from_directory at 224x224, batch 64, no shuffle (it decodes and resizes
        with tf.image.resize, bilinear), prefetch 2, every batch pulled through a v1 Session."""
        tf = self.tf
        path = os.environ.get("PF_BENCH_IMAGES", "/tmp/pf_bench_images")
        if not os.path.exists(os.path.join(path, ".complete")):
            sys.exit(f"compare_peers.py: {path} is missing: run pf-bench image_folder first")
        return self.dataset_rate(lambda: tf.keras.utils.image_dataset_from_directory(
            path, image_size=(224, 224), batch_size=64, shuffle=False).prefetch(2))


# --------------------------------------------------------------------------------- PyTorch


class Torch:
    def __init__(self, threads):
        import numpy as np
        import torch

        torch.set_num_threads(threads)
        torch.manual_seed(SEED)
        self.np, self.torch = np, torch

    def glorot(self, n_in, n_out, g):
        limit = (6.0 / (n_in + n_out)) ** 0.5
        w = (self.torch.rand(n_in, n_out, generator=g) * 2 - 1) * limit
        return w.requires_grad_()

    def seed_mlp(self, variant):
        torch = self.torch
        g = torch.Generator().manual_seed(SEED)
        dims = [600, 512, 128, 128, 1]
        params = []
        for i in range(4):
            params += [self.glorot(dims[i], dims[i + 1], g), torch.zeros((), requires_grad=True)]
        xs, ts = seed_batch(self.np)
        x, t = torch.from_numpy(xs), torch.from_numpy(ts)

        def loss_fn(x, t, *p):
            h = x
            for i in range(4):
                h = h @ p[2 * i] + p[2 * i + 1]
                if i < 3:
                    h = torch.relu(h)
            return ((h - t) ** 2).mean()

        if variant == "compile":
            loss_fn = torch.compile(loss_fn)

        def step():
            loss = loss_fn(x, t, *params)
            for p in params:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                torch._foreach_add_(params, [p.grad for p in params], alpha=-0.01)
            return loss

        return step

    def mlp_seed000_step(self, variant):
        step = self.seed_mlp(variant)
        for _ in range(3):
            step()
        return median_seconds(lambda: [step() for _ in range(10)]) / 10 * 1e3

    def peak_rss(self, variant):
        step = self.seed_mlp(variant)
        for _ in range(50):
            value = step().item()
        return value

    def mnist_mlp_epoch(self, variant):
        torch, np = self.torch, self.np
        g = torch.Generator().manual_seed(SEED)
        w1, w2 = self.glorot(784, 500, g), self.glorot(500, 10, g)
        b1, b2 = torch.zeros(500, requires_grad=True), torch.zeros(10, requires_grad=True)
        params = [w1, b1, w2, b2]
        shadows = [p.detach().clone() for p in params]
        batches = [(torch.from_numpy(bx), torch.from_numpy(by).long())
                   for bx, by in mnist_batches(np)]
        state = {"step": 0}

        def step(x, y):
            logits = torch.relu(x @ w1 + b1) @ w2 + b2
            l2 = 1e-4 * ((w1 ** 2).sum() / 2 + (w2 ** 2).sum() / 2)
            loss = l2 + torch.nn.functional.cross_entropy(logits, y)
            for p in params:
                p.grad = None
            loss.backward()
            n = state["step"]
            lr = 0.3 * 0.99 ** (n // 600)
            state["step"] = n + 1
            decay = min(0.99, (1 + n + 1) / (10 + n + 1))
            with torch.no_grad():
                torch._foreach_add_(params, [p.grad for p in params], alpha=-lr)
                torch._foreach_lerp_(shadows, params, 1 - decay)

        for i in range(20):
            step(*batches[i])
        return 60000 / median_seconds(lambda: [step(*batches[i % 20]) for i in range(600)])

    def lstm_step(self, variant):
        torch = self.torch
        lstm = torch.nn.LSTM(28, 128, batch_first=True)
        x = torch.tensor((self.np.arange(64 * 28 * 28) * 7919 % 256 / 255.0).astype(
            self.np.float32).reshape(64, 28, 28))

        def step():
            lstm.zero_grad()
            out, _ = lstm(x)
            torch.mean(out * out).backward()

        step()
        return median_seconds(lambda: [step() for _ in range(10)]) / 10 * 1e3

    def executor_chain(self, variant):
        torch = self.torch
        x = torch.tensor(1.0)

        def run():
            y = x
            for _ in range(10000):
                y = torch.neg(y)

        with torch.no_grad():
            run()
            return median_seconds(lambda: [run() for _ in range(10)]) / 10 / 10000 * 1e6

    def executor_wide(self, variant):
        torch = self.torch
        x = torch.zeros(4096)

        def run():
            ends = []
            for _ in range(8):
                h = x
                for _ in range(40):
                    h = torch.tanh(h)
                ends.append(h)
            total = ends[0]
            for e in ends[1:]:
                total = total + e
            return total

        with torch.no_grad():
            run()
            return median_seconds(lambda: [run() for _ in range(20)]) / 20 * 1e3

    def session_run_overhead(self, variant):
        torch = self.torch
        x = torch.tensor(1.0)
        runs = 20000
        with torch.no_grad():
            torch.neg(x)
            return median_seconds(lambda: [torch.neg(x) for _ in range(runs)]) / runs * 1e6

    def conv_lenet_step(self, variant):
        """compare_cnn_torch.py's lenet, channels_last (its faster layout here), Adam 1e-3."""
        torch, np = self.torch, self.np
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from compare_cnn_torch import build_lenet

        xs, ys = lenet_batch(np)
        x = torch.from_numpy(xs).reshape(-1, 1, 28, 28)
        return self.train_step_ms(build_lenet(torch), x, torch.from_numpy(ys).long())

    def mobilenet_v2_step(self, variant):
        """compare_cnn_torch.py's MobileNetV2 (Keras's, width 1.0) on 224x224x3, 2 classes,
        batch 8, channels_last, Adam 1e-3."""
        torch, np = self.torch, self.np
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from compare_cnn_torch import build_keras_mobilenet_v2

        size = MOBILENET_SIZE
        xs, ys = lenet_batch(np, MOBILENET_BATCH, size * size * 3, 2)
        # pf-bench's batch is [N, H * W * C] in NHWC order: the same values in NHWC memory.
        x = torch.from_numpy(xs).reshape(-1, size, size, 3).permute(0, 3, 1, 2)
        return self.train_step_ms(build_keras_mobilenet_v2(torch), x, torch.from_numpy(ys).long())

    def train_step_ms(self, model, x, y):
        """ms per step (forward, cross-entropy, backward, Adam 1e-3) of `model` in channels_last,
        timed as pf-bench times its CNN steps."""
        torch = self.torch
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()

        for _ in range(3):
            step()
        return median_seconds(lambda: [step() for _ in range(5)]) / 5 * 1e3

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("side", choices=["tf", "torch"])
    ap.add_argument("figures", help="comma-separated: " + ",".join(FIGURES))
    ap.add_argument("--intra", type=int, default=1)
    ap.add_argument("--inter", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compile", action="store_true", help="torch.compile the seed MLP's loss")
    a = ap.parse_args()
    peer = Tf(a.intra, a.inter) if a.side == "tf" else Torch(a.threads)
    version = peer.tf.__version__ if a.side == "tf" else peer.torch.__version__
    for figure in a.figures.split(","):
        if figure not in FIGURES:
            sys.exit(f"compare_peers.py: unknown figure '{figure}'")
        if not hasattr(peer, figure):
            sys.exit(f"compare_peers.py: {a.side} has no figure '{figure}' "
                     "(input_pipeline, while_loop, image_folder: tf only)")
        variants = ["feed", "const"] if (a.side, figure) == ("tf", "mnist_mlp_epoch") else [""]
        for variant in variants:
            if a.side == "torch" and a.compile:
                variant = "compile"
            value = getattr(peer, figure)(variant)
            print(f"{figure} variant={variant or '-'} value={value:.6g} version={version}",
                  flush=True)


if __name__ == "__main__":
    main()
