"""Where TensorFlow's LSTM kernel stops paying: ESIM's inference at small batch sizes on two bi-LSTM loops.

    python scripts/loop_crossover.py --batches 1,2,3,4,8 --inter 1,2

For each inter-op thread count (one intra-op thread each, a fresh subprocess each), a paper-size ESIM
(random weights, a 2,000-word vocabulary; `--hidden-size` for another size) is traced once per variant with
open shapes: `kernel`, the bi-LSTMs on the few-rows loop at every batch size (the "block" loop with
`KERNEL_ROWS` lifted while tracing, in `--design`: `steps`, the step loop that reads only U, or `kernel`,
TensorFlow's `BlockLSTMV2`; default `zoo.layers.tensorflow_lstm.DESIGN`), and `packed`, the packed loop
(`model.lstm_loop = "packed"`). Each is called on 20 random batches per size
(premises of 6-23 words, hypotheses of 4-11, as SNLI's), three passes, the variants alternating twice;
printed: each variant's best median milliseconds per call and their ratio (packed / kernel: above 1, the
kernel is faster). The machine comes first (CPU, flags, L2 a core: where the crossover falls depends on
the cache that holds the weights); `--record` appends the figures to
`results/loop-crossover/<machine id>.jsonl`. The measurement behind `zoo.layers.loop_choice.KERNEL_ROWS`;
not a test.
"""

import argparse
import os
import subprocess
import sys
import time

from recording import add_record_options, save
from zoo.commands.parsing import COUNT, CommandParser
from zoo.measurements import child as protocol
from zoo.measurements import machine


def measure(batches, inter, hidden_size=300, design=None):
    """Runs in the subprocess: prints one line per batch size, then emits the figures."""
    import keras
    import numpy as np
    import tensorflow as tf

    from zoo.registry import create_model

    keras.utils.set_random_seed(0)
    model = create_model("esim", vocabulary_size=2000, embedding_dim=hidden_size, hidden_size=hidden_size,
                         tunable_words="all", build=False)
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

    from zoo.layers.loop_choice import KERNEL_ROWS
    from zoo.layers.recurrent import few_rows_loop

    def traced(loop, kernel_rows):
        def call(premise, hypothesis):
            model.lstm_loop = loop  # read while tracing: each function keeps its loop
            return model({"premise": premise, "hypothesis": hypothesis}, training=False)

        function = tf.function(call, input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
        with few_rows_loop(design, kernel_rows):  # read while tracing, as the loop
            function.get_concrete_function()
        return function

    functions = {"kernel": traced("auto", 1 << 30), "packed": traced("packed", KERNEL_ROWS)}
    figures = {}
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
        key = f"inter:{inter}/{rows}"
        figures.update({f"{key}/kernel_ms": best["kernel"], f"{key}/packed_ms": best["packed"],
                        f"{key}/packed_over_kernel": best["packed"] / best["kernel"]})
    protocol.emit(figures)


def comma_counts(text):
    """`1,2,3` as [1, 2, 3] (each a count of at least 1)."""
    counts = [int(n) for n in text.split(",")]
    if any(n < 1 for n in counts):
        raise ValueError(text)
    return counts


def main(argv=None):
    parser = CommandParser(prog="loop_crossover.py", description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,2,3,4,8", help="pairs per call, comma-separated")
    parser.add_argument("--inter", default="1,2", help="inter-op thread counts, comma-separated")
    parser.add_argument("--hidden-size", type=COUNT, default=300, help="ESIM's size (300: the paper's)")
    parser.add_argument("--design", default=None, choices=("steps", "kernel"),
                        help="the few-rows loop's design (default: zoo.layers.tensorflow_lstm.DESIGN)")
    add_record_options(parser)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        batches, inters = comma_counts(args.batches), comma_counts(args.inter)
    except ValueError:
        parser.error("--batches and --inter take counts separated by commas, e.g. 1,2,3")
    if args.child is not None:
        return measure(batches, args.child, args.hidden_size, args.design)
    info = machine.describe(seconds=0)
    print("\n".join(machine.lines(info)), flush=True)
    figures = {}
    for inter in inters:
        env = dict(os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS=str(inter), TF_CPP_MIN_LOG_LEVEL="3")
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--batches", args.batches, "--hidden-size",
                               str(args.hidden_size), "--child", str(inter)]
                              + (["--design", args.design] if args.design else []),
                              env=env, capture_output=True, text=True)
        print("\n".join(line for line in done.stdout.splitlines() if not line.startswith(protocol.RESULT_MARK)),
              flush=True)
        result = protocol.parse(done.stdout)
        if done.returncode or result is None:
            print(f"loop_crossover.py: error: inter-op {inter}: {protocol.last_error_line(done.stderr)}",
                  file=sys.stderr)
            return 1
        figures.update(result)
    save(args, "loop-crossover", {name: [value] for name, value in figures.items()}, info,
         notes=f"ESIM hidden size {args.hidden_size}, design {args.design or 'default'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
