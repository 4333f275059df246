"""What checking an artifact's files against its manifest costs, on a paper-size run and its SavedModel.

    python scripts/check_cost.py                         # esim: 40,000 words, 300-d vectors, the paper's sizes
    python scripts/check_cost.py --model rocktaschel_wbw --repeats 5

A run directory of the model at its paper size with random weights is written by the library
(`zoo.training.untrained.write_untrained_run`, as scripts/benchmark_serving.py builds its runs), its
`best.weights.h5` then saved with Adam's moments built, as training saves it, and sealed
(`zoo.runs.manifest.seal`). Then, each the median of `--repeats` runs, the files in the page cache (a run
just written or read):
- `check run`: `zoo.runs.manifest.check_run` on `config.json`, `vocab.txt` and `best.weights.h5`, what
  `zoo.load` (evaluate, predict, export, the diagnostics, the demo) checks before it builds the model,
  beside `zoo.load` itself (the check included);
- `seal run`: writing the manifest with every file hashed (what a commit costs at most: a commit hashes
  only the files it changed);
- `check SavedModel`: `zoo.export.version_files.verify_saved_model` on the exported version (every file),
  beside `tf.saved_model.load` of it.
The hashing rate (MB/s) is the check's bytes over its time. The machine is named (`scripts/machine.py`);
the checks are SHA-256 on one core, no matrix products, so no GEMM fraction applies.
"""

import os
import statistics
import tempfile
import time

from zoo.commands.parsing import CommandParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(call, repeats):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main(argv=None):
    parser = CommandParser(prog="check_cost.py", description="The cost of checking a run and a SavedModel against their manifests.")
    parser.add_argument("--model", default="esim")
    parser.add_argument("--vocabulary", type=int, default=40_000)
    parser.add_argument("--embedding-dim", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work-dir", default=None, help="where the run and the export go (default: temporary)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from zoo.measurements import machine
    from benchmark_serving import make_run, read_pairs

    import keras
    import tensorflow as tf

    import zoo
    from zoo import fileio
    from zoo.export import export_saved_model
    from zoo.export.version_files import verify_saved_model
    from zoo.runs import layout
    from zoo.runs.manifest import check_run, seal

    work = args.work_dir or tempfile.mkdtemp(prefix="check-cost-")
    run_dir = os.path.join(work, "run")
    if not os.path.exists(os.path.join(run_dir, layout.BEST_WEIGHTS_FILE)):
        make_run(run_dir, args.model, read_pairs(), args.vocabulary, args.embedding_dim)
        run = zoo.load(run_dir)
        run.model.compile(optimizer=keras.optimizers.Adam(), loss="sparse_categorical_crossentropy")
        run.model.optimizer.build(run.model.trainable_variables)  # the moments a trained run's file holds
        layout.save_weights(run.model, os.path.join(run_dir, layout.BEST_WEIGHTS_FILE))
        seal(run_dir)
    names = [layout.CONFIG_FILE, layout.VOCAB_FILE, layout.BEST_WEIGHTS_FILE]
    run_bytes = sum(size(os.path.join(run_dir, n)) for n in names)

    def check():
        fileio.checksums.HASHER._known.clear()  # hashed again each time, as a new process would
        check_run(run_dir, names)

    def sealing():
        fileio.checksums.HASHER._known.clear()
        seal(run_dir)

    check()  # the files into the page cache
    rows = [("check run (config.json, vocab.txt, best.weights.h5)", run_bytes, timed(check, args.repeats))]
    rows.append(("seal run (every covered file hashed)", run_bytes + size(os.path.join(run_dir, layout.HISTORY_FILE))
                 if os.path.exists(os.path.join(run_dir, layout.HISTORY_FILE)) else run_bytes,
                 timed(sealing, args.repeats)))
    def load():
        fileio.checksums.HASHER._known.clear()
        zoo.load(run_dir)

    rows.append(("zoo.load (the check included)", None, timed(load, max(1, args.repeats // 2))))
    model_dir = os.path.join(work, "saved_model")
    if not os.path.exists(os.path.join(model_dir, "1", "saved_model.pb")):
        export_saved_model(zoo.load(run_dir), model_dir, 1, batch_sizes=(1, 32))
    version = os.path.join(model_dir, "1")
    verify_saved_model(version)
    rows.append(("check SavedModel (every file of the version)", size(version),
                 timed(lambda: verify_saved_model(version), args.repeats)))
    rows.append(("tf.saved_model.load", None, timed(lambda: tf.saved_model.load(version), max(1, args.repeats // 2))))

    info = {"cpu": machine.cpu()}
    print(f"machine: {machine.cpu_label(info['cpu'])}; {args.model} at its paper size, {args.vocabulary:,} words, "
          f"{args.embedding_dim}-d vectors (random weights, Adam's moments in best.weights.h5); median of "
          f"{args.repeats}, files in the page cache")
    print(f"| what | bytes | seconds | MB/s |\n|---|---|---|---|")
    for what, count, seconds in rows:
        rate = f"{count / seconds / 1e6:,.0f}" if count else ""
        print(f"| {what} | {f'{count / 1e6:,.1f} MB' if count else ''} | {seconds:.3f} | {rate} |")
    if args.work_dir is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
