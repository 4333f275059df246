"""Where TensorFlow's LSTM kernel stops paying: ESIM's inference at small batch sizes on two bi-LSTM loops.

    python scripts/loop_crossover.py --batches 1,2,3,4,8 --inter 1,2

For each inter-op thread count (one intra-op thread each, a fresh subprocess each), a paper-size ESIM
(random weights, a 2,000-word vocabulary; `--hidden-size` for another size) is traced once per variant with
open shapes: `kernel`, the bi-LSTMs on the few-rows loop at every batch size (the "block" loop with
`KERNEL_ROWS` lifted while tracing, in `--design`: `steps`, the step loop that reads only U, or `kernel`,
TensorFlow's `BlockLSTMV2`; default `zoo.layers.tensorflow_lstm.DESIGN`), and `packed`, the packed loop (`model.lstm_loop = "packed"`). Each is called on 20 random batches per size
(premises of 6-23 words, hypotheses of 4-11, as SNLI's), three passes, the variants alternating twice;
printed: each variant's best median milliseconds per call and their ratio (packed / kernel: above 1, the
kernel is faster). The measurement behind `zoo.layers.loop_choice.KERNEL_ROWS`; not a test.
"""

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(batches, inter, hidden_size=300, design=None):
    """Runs in the subprocess: prints one line per batch size."""
    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, ROOT)
    import keras

    from zoo.models.esim import ESIM

    keras.utils.set_random_seed(0)
    model = ESIM(vocabulary_size=2000, embedding_dim=hidden_size, hidden_size=hidden_size)
    rng = np.random.default_rng(0)

    def batch(rows):
        lengths = rng.integers(6, 24, rows), rng.integers(4, 12, rows)
        out = []
        for side in lengths:
            ids = np.zeros((rows, side.max()), "int32")
            for i, n in enumerate(side):
                ids[i, :n] = rng.integers(3, 2000, n)
            out.append(tf.constant(ids))
        return out

    import zoo.layers.recurrent as recurrent
    from zoo.layers import tensorflow_lstm

    def traced(loop, kernel_rows):
        def call(premise, hypothesis):
            model.lstm_loop = loop  # read while tracing: each function keeps its loop
            return model({"premise": premise, "hypothesis": hypothesis}, training=False)

        function = tf.function(call, input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
        kept, recurrent.KERNEL_ROWS = recurrent.KERNEL_ROWS, kernel_rows  # read while tracing, as the loop
        kept_design, tensorflow_lstm.DESIGN = tensorflow_lstm.DESIGN, design or tensorflow_lstm.DESIGN
        try:
            function.get_concrete_function()
        finally:
            recurrent.KERNEL_ROWS, tensorflow_lstm.DESIGN = kept, kept_design
        return function

    functions = {"kernel": traced("auto", 1 << 30), "packed": traced("packed", recurrent.KERNEL_ROWS)}
    for rows in batches:
        data = [batch(rows) for _ in range(20)]
        best = {}
        for loop in ("kernel", "packed", "kernel", "packed"):
            function = functions[loop]
            function(*data[0])
            times = []
            for _ in range(3):
                for pair in data:
                    start = time.perf_counter()
                    function(*pair)
                    times.append(time.perf_counter() - start)
            best[loop] = min(best.get(loop, float("inf")), 1e3 * float(np.median(times)))
        print(f"inter-op {inter}, intra-op 1, batch {rows}: kernel {best['kernel']:.2f} ms, "
              f"packed {best['packed']:.2f} ms, packed / kernel {best['packed'] / best['kernel']:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,2,3,4,8", help="pairs per call, comma-separated")
    parser.add_argument("--inter", default="1,2", help="inter-op thread counts, comma-separated")
    parser.add_argument("--hidden-size", type=int, default=300, help="ESIM's size (300: the paper's)")
    parser.add_argument("--design", default=None, choices=("steps", "kernel"),
                        help="the few-rows loop's design (default: zoo.layers.tensorflow_lstm.DESIGN)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if args.child is not None:
        return measure(batches, args.child, args.hidden_size, args.design)
    for inter in [int(n) for n in args.inter.split(",")]:
        env = dict(os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS=str(inter), TF_CPP_MIN_LOG_LEVEL="3")
        subprocess.run([sys.executable, __file__, "--batches", args.batches, "--hidden-size", str(args.hidden_size),
                        "--child", str(inter)] + (["--design", args.design] if args.design else []), env=env, check=True)


if __name__ == "__main__":
    main()
