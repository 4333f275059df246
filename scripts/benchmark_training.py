"""Training speed on the path `nli-zoo train` runs, each figure with its CPU and its share of its GEMM peak.

Per-step and per-epoch times, and the per-pair rate and fixed part of an epoch from two data sizes.

    python scripts/benchmark_training.py --models esim --threads 1
    python scripts/benchmark_training.py --models esim --threads 1 --autotune       # tf.data's autotuner on
    python scripts/benchmark_training.py --models esim --threads 1 --runs 3 \
        --torch-reference ESIM --torch-python /path/to/torch-env/bin/python
    python scripts/benchmark_training.py --models esim --data /work/shared/data/snli_1.0_dev_head/snli_1.0_dev_head.jsonl
    python scripts/benchmark_training.py --models esim --threads 1 --profile
    python scripts/benchmark_training.py --shapes-only --data snli_sample
    python scripts/benchmark_training.py --models esim --threads 1 ... --record   # results/training/<machine id>.jsonl

What runs: each measurement is a fresh process (`scripts/training_child.py`) that calls `zoo.training.train` (the function behind
`nli-zoo train`: `RunConfig`, the trainer's model building and compilation, the `zoo.data` tf.data
pipeline, every callback of a run) in a throwaway run directory, with random 300-d word vectors
(`--embeddings none`; speed does not depend on their values) and the preset's sizes. The pairs come from
the library's loaders (`zoo.data.corpora.load_corpus`: `--data` is anything `nli-zoo train --data` takes,
default the shipped SNLI rows `snli_sample`; `snli` is the full corpus from tensorflow-datasets); their
training pairs (or, for a single file, its pairs) are repeated in order up to `--pairs` and written as a
throwaway NLI folder (train.jsonl, dev.jsonl and test.jsonl of `--eval-pairs`) that the run reads back.

A callback the benchmark gives the trainer (`zoo.training.train(..., callbacks=[clock])`, called after the
run's own) times every training step, the validation pass, each epoch's end (checkpoints, backup,
TensorBoard, the images every `--images-every` epochs) and the end of training, so a wait after the last
step (such as tf.data's autotuner's, issue 27) shows as `fit tail`. Columns:
- `steps s`: first step's start to last step's end of a steady epoch (epochs after the first, mean);
- `epoch s`: a steady epoch's start to the next one's (validation and every callback included);
- `median / max step ms`; `fit tail s`: from the last epoch's end to the end of training (the run's
  `on_train_end`: the last epoch's images when that epoch did not draw them); each run also prints what a
  steady epoch's end costs: the validation pass, then the run's callbacks;
- per-pair rate and fixed part: from the steady epochs of the two sizes of `--pairs` (1,024 and 2,048 by
  default): `rate = (n2 - n1) / (t2 - t1)`, `fixed = t1 - n1 / rate`; a wait or a constant cost shows as
  `fixed` and no longer hides in pairs/s;
- `% GEMM peak` (ESIM): the steady pairs/s times ESIM's useful training FLOPs per pair (3x the forward
  pass on the real, unpadded tokens; `zoo.measurements.machine`) over this machine's measured GEMM peak at the
  same thread count.

`--threads N` sets TensorFlow's intra- and inter-op pools of each measuring process. `--autotune` turns
tf.data's autotuner back on in the run's pipeline (the trainer turns it off: `zoo.data.pipeline.
with_input_options`), for the before/after. `--loop fused` trains the bi-LSTMs on the fused loop
(every padded position; the loop before packing) and `--loop keras` (or `--keras-loops`) on Keras's own
loops, instead of what `nli-zoo train` runs (`zoo.layers.loop_choice`: packed sequences under TensorFlow
on a CPU, training steps and the dev pass alike); the benchmark asks it as a user does, through the
models' `lstm_loop`. `KERAS_BACKEND=jax` trains under JAX (the fused loop). `--torch-reference DIR` (a
checkout of github.com/coetaur0/ESIM, the folder holding `esim/`) with `--torch-python` (an environment
with PyTorch; the zoo never depends on it) also trains the reference's `ESIM`
(`scripts/reference/esim_torch_training.py`) on the very batches the
zoo's pipeline made for the first size (Adam at 0.0004, cross-entropy, gradients clipped to norm 10,
dropout 0.5, every word vector trained; each batch cut to its longest sentences and packed by the
reference), with a word-vector table of the run's size, on the same threads, `--runs` times. `--profile`
traces the second epoch with the TensorFlow profiler and prints the ops' time by op type and part.
"""

import json
import os
import statistics
import sys
import tempfile

from recording import add_record_options, reference_command, save
from training_child import LOOPS, training_examples
from zoo.commands.parsing import BATCH_SIZE, COUNT, COUNT_OR_ZERO, FILE_TO_WRITE, SECONDS, CommandParser
from zoo.measurements import child as protocol
from zoo.measurements import machine

SCRIPTS = os.path.dirname(os.path.abspath(__file__))


def print_profile(name, result):
    profile = result["profile"]
    print(f"{name}: second epoch of {result['pairs']} pairs under the profiler: ops busy {profile['busy_s']:.2f} s "
          f"of {profile['wall_s']:.2f} s")
    for title in ("by_type", "by_part"):
        print(f"  {title.replace('_', ' ')}:")
        for key, seconds in profile[title].items():
            print(f"    {key:<64} {1e3 * seconds:9.1f} ms  {100 * seconds / profile['busy_s']:5.1f}%")


# The PyTorch reference ---------------------------------------------------------------------------------
def torch_runs(args, zoo_run, batches_file):
    """Trains the PyTorch reference ESIM on the batches the zoo's pipeline made, `--runs` times."""
    spec = {"reference": os.path.abspath(args.torch_reference), "batches": batches_file, "threads": args.threads,
            "vocabulary": zoo_run["vocabulary_size"], "embedding_dim": zoo_run["embedding_dim"],
            "hidden_size": zoo_run["hidden_size"]}
    command, env = reference_command(args.torch_python, "esim_torch_training.py", spec, args.torch_reference)
    results = []
    for run in range(args.runs):
        result = protocol.run(command, env=env)
        if "error" in result:
            print(f"PyTorch reference: run {run + 1} failed: {result['error']}", file=sys.stderr, flush=True)
            break
        results.append(result)
        print(f"PyTorch reference ESIM run {run + 1}: steady epoch {results[-1]['steady_epoch_s']:.2f} s "
              f"({results[-1]['pairs_per_s']:,.1f} pairs/s; CPU {results[-1]['steady_epoch_cpu_s']:.2f} s), "
              f"torch {results[-1]['torch']}", flush=True)
    return results


# Reporting ---------------------------------------------------------------------------------------------
def per_pair(runs_by_size):
    """`{key: (seconds per pair, fixed seconds)}` of the steps span and of the whole epoch, from the median
    steady epoch of the smallest and the largest size."""
    sizes = sorted(runs_by_size)
    if len(sizes) < 2:
        return {}
    n1, n2 = sizes[0], sizes[-1]
    out = {}
    for key in ("steps_s", "epoch_s"):
        t1 = statistics.median(r[key] for r in runs_by_size[n1])
        t2 = statistics.median(r[key] for r in runs_by_size[n2])
        slope = (t2 - t1) / (n2 - n1)
        out[key] = {"pairs_per_s": 1 / slope if slope > 0 else float("inf"), "fixed_s": t1 - n1 * slope}
    return out


def gemm_share(run, pairs_per_s, info, key="train_flops_per_pair"):
    """The share of this machine's measured GEMM peak (at the run's threads) that `pairs_per_s` uses, at the
    FLOPs per pair under `key` (the zoo's; `reference_train_flops_per_pair`: the reference's, F unfolded)."""
    peak = machine.peak_for(info, run["threads"] if run["threads"] != "all" else None)
    if not peak or key not in run:
        return None
    return pairs_per_s * run[key] / (peak * 1e9)


def report(rows, references, info):
    cell = lambda values, fmt: (f"{fmt.format(statistics.median(values))}" + (
        f" ({fmt.format(min(values))}-{fmt.format(max(values))})" if len(values) > 1 else ""))
    print(f"\nmachine: {machine.cpu_label(info['cpu'])}; peak fp32 GEMM (TensorFlow MatMul): " + ", ".join(
        f"{t} thread(s) {p:.0f} GFLOP/s" for t, p in info.get("peak_gflops", {}).items()))
    print("| model | pairs | threads | autotune | steps s | epoch s | median / max step ms | fit tail s | "
          "steps pairs/s | epoch pairs/s | % GEMM peak (steps) | runs |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, size), runs in rows.items():
        first = runs[0]
        steps = [r["pairs"] / r["steps_s"] for r in runs]
        share = gemm_share(first, statistics.median(steps), info)
        print(f"| `{name}` | {size:,} | {first['threads']} | {'on' if first['autotune'] else 'off'} | "
              f"{cell([r['steps_s'] for r in runs], '{:.2f}')} | {cell([r['epoch_s'] for r in runs], '{:.2f}')} | "
              f"{statistics.median(e['median_step_ms'] for r in runs for e in r['epochs'][1:] or r['epochs']):.0f} / "
              f"{max(e['max_step_ms'] for r in runs for e in r['epochs'][1:] or r['epochs']):.0f} | "
              f"{cell([r['fit_tail_s'] for r in runs], '{:.2f}')} | {cell(steps, '{:.1f}')} | "
              f"{cell([r['pairs'] / r['epoch_s'] for r in runs], '{:.1f}')} | "
              f"{'-' if share is None else f'{100 * share:.1f}%'} | {len(runs)} |")
    for name in dict.fromkeys(n for n, _ in rows):
        fit = per_pair({size: runs for (n, size), runs in rows.items() if n == name})
        for key, title in (("steps_s", "training steps"), ("epoch_s", "whole epoch")):
            if key in fit:
                print(f"{name}: {title}: {fit[key]['pairs_per_s']:,.1f} pairs/s per extra pair, fixed part "
                      f"{fit[key]['fixed_s']:+.2f} s an epoch (two sizes)")
    for name, reference in references.items():
        if reference:
            theirs = [m["pairs_per_s"] for m in reference]
            size = min(s for n, s in rows if n == name)
            ours = [r["pairs"] / r["steps_s"] for r in rows[(name, size)]]
            epoch = [r["pairs"] / r["epoch_s"] for r in rows[(name, size)]]
            share = gemm_share(rows[(name, size)][0], statistics.median(theirs), info, "reference_train_flops_per_pair")
            print(f"{name}, {size:,} pairs: PyTorch reference {cell(theirs, '{:.1f}')} pairs/s"
                  + ("" if share is None else f" ({100 * share:.1f}% of GEMM peak)")
                  + f"; zoo / reference: steps {statistics.median(ours) / statistics.median(theirs):.2f}x, "
                  f"whole epoch {statistics.median(epoch) / statistics.median(theirs):.2f}x")
            their_cpu = [m["steady_epoch_cpu_s"] for m in reference if "steady_epoch_cpu_s" in m]
            if their_cpu:  # CPU time: the work whatever the wait, on a machine shared with other jobs
                our_cpu = statistics.median(r["steps_cpu_s"] for r in rows[(name, size)])
                print(f"{name}, {size:,} pairs: CPU seconds of a steady epoch's steps: zoo {our_cpu:.2f}, reference "
                      f"{statistics.median(their_cpu):.2f} ({statistics.median(their_cpu) / our_cpu:.2f}x)")


def shapes_only(args):
    """Prints the batch shapes and padding of the data under each distinct length grid of the presets."""
    import numpy as np

    import zoo
    from zoo.data.batching import plan_batches
    from zoo.data.tokenizer import Tokenizer
    from zoo.runs.datasets import length_grid

    examples = training_examples(args.data, args.roles)
    seen = set()
    print(f"{len(examples):,} pairs from {args.data}")
    for name in args.models:
        preset = zoo.get_preset(name)
        data = preset.data
        key = (data.max_premise_length, data.max_hypothesis_length, data.lowercase)
        if key in seen:
            continue
        seen.add(key)
        tokenizer, grid = Tokenizer(lowercase=data.lowercase), length_grid(data)
        lp = np.asarray([max(1, min(len(tokenizer.tokenize(e["premise"])), key[0] or 10 ** 9)) for e in examples])
        lh = np.asarray([max(1, min(len(tokenizer.tokenize(e["hypothesis"])), key[1] or 10 ** 9)) for e in examples])
        size = args.batch_size or preset.train.batch_size
        batches = plan_batches(lp, lh, grid, size, shuffle=True)
        padded = sum(size * (s[0] + s[1]) for _, s in batches)
        print(f"max lengths {key[:2]}: {grid}: {len({s for _, s in batches})} shapes in {len(batches)} batches; "
              f"real tokens {float((lp.sum() + lh.sum()) / padded):.1%} of padded positions")


def build_parser():
    parser = CommandParser(prog="benchmark_training.py", description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["esim"], help="registered names (default: esim)")
    parser.add_argument("--data", default="snli_sample",
                        help="what `nli-zoo train --data` takes (default: the shipped SNLI rows, snli_sample)")
    parser.add_argument("--roles", default=None, help="as `nli-zoo train --roles` (which split is train)")
    parser.add_argument("--pairs", type=COUNT, nargs="+", default=[1024, 2048],
                        help="training pairs an epoch, one measurement each (default: 1024 2048)")
    parser.add_argument("--eval-pairs", type=COUNT, default=32, help="dev and test pairs of the run (default 32)")
    parser.add_argument("--epochs", type=COUNT_OR_ZERO, default=2, help="timed epochs after the first (default 2)")
    parser.add_argument("--runs", type=COUNT, default=1, help="fresh processes per size (default 1)")
    parser.add_argument("--threads", type=COUNT_OR_ZERO, default=0,
                        help="TensorFlow threads of each process (default 0: all)")
    parser.add_argument("--autotune", action="store_true", help="turn tf.data's autotuner back on (before/after)")
    parser.add_argument("--loop", choices=LOOPS, default="auto",
                        help="the bi-LSTMs' loop, asked of the model as a user asks it (`model.lstm_loop`): auto "
                             "(what nli-zoo train runs: packed under TensorFlow on a CPU, fused under JAX), packed, "
                             "fused (every padded position, the loop before packing) or keras (Keras's own loops)")
    parser.add_argument("--keras-loops", dest="loop", action="store_const", const="keras",
                        help="the same as --loop keras")
    parser.add_argument("--images-every", type=COUNT_OR_ZERO, default=None,
                        help="as `nli-zoo train --images-every` (default: the trainer's, 5)")
    parser.add_argument("--hidden-size", type=COUNT, default=None, help="override the preset's hidden size")
    parser.add_argument("--batch-size", type=BATCH_SIZE, default=None, help="override the preset's batch size")
    parser.add_argument("--embedding-dim", type=COUNT, default=300, help="random word vectors' size (default 300)")
    parser.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"))
    parser.add_argument("--compile-cache", default=None, help="as `nli-zoo train --compile-cache`")
    parser.add_argument("--gemm-seconds", type=SECONDS, default=1.0,
                        help="seconds per shape of the GEMM peak measurement (0: skip it)")
    parser.add_argument("--torch-reference", default=None, help="a checkout of github.com/coetaur0/ESIM (ESIM only)")
    parser.add_argument("--torch-python", default=None, help="the python of an environment with PyTorch")
    parser.add_argument("--profile", action="store_true", help="TensorFlow profile of the second epoch")
    parser.add_argument("--shapes-only", action="store_true", help="only print batch shapes and padding")
    parser.add_argument("--json", type=FILE_TO_WRITE, help="also write every figure to this JSON file")
    add_record_options(parser)
    return parser


SPEC_FIELDS = ("data", "roles", "eval_pairs", "epochs", "threads", "autotune", "loop", "images_every", "hidden_size",
               "batch_size", "embedding_dim", "jit_compile", "compile_cache", "profile")


def child_spec(args, name, size, torch_batches=None):
    """What one measuring process trains (`training_child.measure`'s arguments)."""
    return {**{field: getattr(args, field) for field in SPEC_FIELDS}, "one": name, "size": size,
            "torch_batches": torch_batches}


def print_run(m, run):
    steady = m["epochs"][1:] or m["epochs"]
    print(f"{m['model']}, {m['pairs']:,} pairs, run {run + 1}: first epoch {m['first_epoch_s']:.1f} s; steady: steps "
          f"{m['steps_s']:.2f} s ({m['pairs'] / m['steps_s']:,.1f} pairs/s; CPU {m['steps_cpu_s']:.2f} s), "
          f"epoch {m['epoch_s']:.2f} s; training ended {m['fit_tail_s']:.2f} s after the last epoch's end; epochs "
          "end at " + ", ".join(f"{e['end_since_fit_s']:.2f}" for e in m["epochs"]) + " s after fit began", flush=True)
    print(f"  a steady epoch's end: validation {statistics.mean(e['validation_s'] for e in steady):.2f} s, "
          f"then the run's callbacks {statistics.mean(e['callbacks_s'] for e in steady):.2f} s "
          f"(checkpoints, backup, TensorBoard; images every {m['images_every']} epoch(s) and after "
          f"the last); backend {m['backend']}, loop {m['loop']}", flush=True)


def measure_all(args):
    """Every model at every size, `--runs` fresh processes each (and the reference after the first size's
    first run); returns `(rows, references)`."""
    rows, references, work = {}, {}, tempfile.mkdtemp(prefix="nli_zoo_bench_")
    for name in args.models:
        for size in args.pairs:
            rows[(name, size)] = []
            for run in range(args.runs):
                batches = (os.path.join(work, f"{name}_batches.npz")
                           if args.torch_reference and name == "esim" and run == 0 and size == args.pairs[0] else None)
                m = protocol.run([sys.executable, os.path.join(SCRIPTS, "training_child.py"),
                                  json.dumps(child_spec(args, name, size, batches))])
                if "error" in m:
                    print(f"{name} ({size} pairs): run {run + 1} failed: {m['error']}", file=sys.stderr, flush=True)
                    break
                rows[(name, size)].append(m)
                print_run(m, run)
                if args.profile:
                    print_profile(name, m)
                if batches:
                    references[name] = torch_runs(args, m, batches)
            if not rows[(name, size)]:
                del rows[(name, size)]
    return rows, references


def figures_of(rows, references, threads, info):
    """The runs' figures as `{MODEL/THREADS/PAIRS/FIGURE: [one value a run]}`, the reference's as
    `torch/THREADS/PAIRS/pairs_per_s` (zoo.measurements.record)."""
    figures = {}
    for (name, size), runs in rows.items():
        prefix = f"{name}/{threads}/{size}"
        figures[f"{prefix}/steps_pairs_per_s"] = [r["pairs"] / r["steps_s"] for r in runs]
        figures[f"{prefix}/epoch_pairs_per_s"] = [r["pairs"] / r["epoch_s"] for r in runs]
        figures[f"{prefix}/steps_cpu_s"] = [r["steps_cpu_s"] for r in runs]
        figures[f"{prefix}/first_epoch_s"] = [r["first_epoch_s"] for r in runs]
        figures[f"{prefix}/fit_tail_s"] = [r["fit_tail_s"] for r in runs]
    for (name, size), runs in rows.items():
        share = gemm_share(runs[0], statistics.median(r["pairs"] / r["steps_s"] for r in runs), info)
        figures[f"{name}/{threads}/{size}/steps_gemm_peak_share"] = [] if share is None else [share]
    for name, reference in references.items():
        size = min(s for n, s in rows if n == name)
        figures[f"torch/{threads}/{size}/pairs_per_s"] = [m["pairs_per_s"] for m in reference]
        share = gemm_share(rows[(name, size)][0], statistics.median(m["pairs_per_s"] for m in reference), info,
                           "reference_train_flops_per_pair")
        figures[f"torch/{threads}/{size}/gemm_peak_share"] = [] if share is None else [share]
        figures[f"torch/{threads}/{size}/steady_epoch_cpu_s"] = [m["steady_epoch_cpu_s"] for m in reference
                                                                 if "steady_epoch_cpu_s" in m]
    return {name: values for name, values in figures.items() if values}


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.torch_reference and not args.torch_python:
        parser.error("--torch-reference needs --torch-python")
    if args.shapes_only:
        shapes_only(args)
        return 0
    cores = machine.cpu()["cores"] or 1
    info = machine.describe(args.gemm_seconds, sorted({1, args.threads or cores}))
    print("\n".join(machine.lines(info)), flush=True)
    rows, references = measure_all(args)
    if rows:
        report(rows, references, info)
    if args.json:
        from zoo.fileio import write_json

        write_json(args.json, {"machine": info, "results": [{"model": n, "pairs": s, "runs": r}
                                                            for (n, s), r in rows.items()],
                               "per_pair": {n: per_pair({s: r for (m, s), r in rows.items() if m == n})
                                            for n in dict.fromkeys(n for n, _ in rows)},
                               "torch_reference": references})
    if rows:
        torch = next((m["torch"] for runs in references.values() for m in runs if "torch" in m), None)
        save(args, "training", figures_of(rows, references, args.threads or cores, info), info,
             extra_versions={"torch": torch} if torch else None)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
