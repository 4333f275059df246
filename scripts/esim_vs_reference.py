"""ESIM level with an independent implementation: the zoo's ESIM and the PyTorch reference ESIM
(github.com/coetaur0/ESIM, imported from a checkout you give; never part of the zoo) trained on the same pairs,
with the same word vectors, vocabulary, hidden size, batches, optimizer and epochs, several seeds each, and the
two groups' test accuracies compared with the statistics `nli-zoo compare` uses (`zoo.comparison.statistics`):
each group's interval of the mean and of one more run (seeds + items), the test whose unit is the run, the
items-only paired bootstrap, and how many seeds would resolve the difference.

    python scripts/esim_vs_reference.py --data /path/to/snli_1.0_dev_tokens --reference /path/to/ESIM \\
        --torch-python /path/to/torch-env/bin/python [--train 3000] [--dev 800] [--holdout 1842] \\
        [--hidden-size 32] [--epochs 3] [--seeds 3] [--threads 1] [--reference-dropout sequence element] \\
        [--json out.json] [--record]

The pairs (`--data`: a folder of `premise.txt`, `hypothesis.txt`, `label.txt`, or an SNLI jsonl file) are
shuffled (seed 0) and cut as `scripts/learning_check.py` cuts them. Both sides train with Chen et al.'s
optimizer as both implementations have it (Adam, learning rate 4e-4, gradient norm clipped at 10, batch 32,
dropout 0.5) at a constant learning rate (`lr_decay=null`: the halving schedule needs more epochs than a check
has), and both score the test pairs with the weights of their best dev epoch. The reference trains on the
zoo's own batches of each seed (`zoo.runs.datasets.make_model_batches`) and its word vectors are the zoo
run's matrix, with the rows the zoo keeps fixed kept fixed (their gradient zeroed). What differs is each
implementation's own: initialisation, the reference's packed LSTMs and its masking, and its dropout, which
draws one mask a sentence on the word vectors and the projections (`RNNDropout`) where the zoo draws one an
element; `--reference-dropout element` trains the reference with one an element (the `nn.Dropout` line its
model.py keeps as a comment), and `sequence element` trains both beside the same zoo runs.
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from learning_check import machine, write_split_files  # noqa: E402
from recording import add_record_options, reference_command, save  # noqa: E402

REFERENCE_DROPOUT = ("sequence", "element")


def split_pairs(path, holdout, dev, train, seed=0):
    """The pairs of `path` shuffled and cut as learning_check.py cuts them: `(train, dev, test, skipped)`."""
    from zoo.data.tokens_folder import read_pairs

    examples, skipped = read_pairs(path)
    order = np.random.default_rng(seed).permutation(len(examples))
    test = [examples[i] for i in order[:holdout]]
    rest = [examples[i] for i in order[holdout:]]
    training, development = rest[:len(rest) - dev], rest[len(rest) - dev:]
    return (training[:train] if train else training), development, test, skipped


def zoo_run(data_dir, work_dir, seed, args):
    """The zoo's ESIM trained by `zoo.training.train`: `(result, per-test-item correct)`."""
    import zoo.training

    result = zoo.training.train(
        model="esim", data_dir=data_dir, embeddings=args.embeddings, epochs=args.epochs, batch_size=32,
        overrides=[f"hidden_size={args.hidden_size}", "lr_decay=null", f"patience={args.epochs}"], seed=seed,
        run_dir=os.path.join(work_dir, f"esim-seed={seed}"), verbose=0, attention_examples=0, log_every=0,
        compile_cache="none")
    test = result.results.test
    correct = np.frombuffer(test["predictions"].encode(), "uint8") == np.frombuffer(test["gold"].encode(), "uint8")
    return result, correct


def reference_inputs(result, splits, seed, args, path):
    """The reference's inputs for one seed, from the zoo run of that seed: the zoo's batches of each epoch, its
    word-vector matrix and which rows train, the dev and test pairs encoded in order (`.npz` at `path`)."""
    from zoo.data.pipeline import encode_pairs
    from zoo.runs.datasets import make_model_batches

    vocab, tokenizer, vectors, settings = result.vocab, result.tokenizer, result.embeddings, result.record.settings
    arrays, count = {}, 0
    dataset = make_model_batches(splits["train"], vocab, tokenizer, settings, shuffle=True, seed=seed)
    for epoch in range(args.epochs):
        for features, labels, weights in dataset.as_numpy_iterator():
            arrays.update({f"{count}_premise": features["premise"], f"{count}_hypothesis": features["hypothesis"],
                           f"{count}_labels": labels, f"{count}_weights": weights, f"{count}_epoch": np.int32(epoch)})
            count += 1
    data = settings.data
    for split in ("dev", "test"):
        pairs = [(e["premise"], e["hypothesis"]) for e in splits[split]]
        encoded = encode_pairs(pairs, vocab, tokenizer, data.max_premise_length, data.max_hypothesis_length)
        arrays.update({f"{split}_premise": encoded["premise"], f"{split}_hypothesis": encoded["hypothesis"],
                       f"{split}_labels": np.asarray([e["label"] for e in splits[split]], dtype=np.int64)})
    tunable = (vectors.tunable_mask if vectors.tunable_mask is not None
               else np.full(len(vocab), vectors.tunable_words == "all"))
    np.savez(path, count=np.int32(count), epochs=np.int32(args.epochs), matrix=vectors.matrix.astype("float32"),
             tunable=np.asarray(tunable, dtype=bool), **arrays)


def reference_run(inputs_path, seed, args, dropout):
    """The reference trained in the PyTorch environment (`scripts/reference/esim_torch_level.py`) with its dropout
    masks one a sequence (`dropout="sequence"`, as it ships) or one an element (`"element"`): its result."""
    from zoo.measurements import child

    spec = {"inputs": inputs_path, "seed": seed, "hidden_size": args.hidden_size, "threads": args.threads,
            "dropout": dropout}
    command, env = reference_command(args.torch_python, "esim_torch_level.py", spec, args.reference)
    result = child.run(command, env=env)
    if "error" in result:
        raise SystemExit(f"the PyTorch reference failed (seed {seed}): {result['error']}")
    return result


def compare_groups(zoo_correct, reference_correct):
    """The two groups (`[runs x items]` booleans) compared with `zoo.comparison.statistics`."""
    from zoo.comparison import statistics

    groups = {}
    for name, correct in (("zoo", zoo_correct), ("reference", reference_correct)):
        correct = np.asarray(correct, dtype="float64")
        accuracies = correct.mean(axis=1)
        share = correct.mean(axis=0)
        groups[name] = {"accuracies": accuracies.tolist(), "mean": float(accuracies.mean()),
                        "std": float(accuracies.std(ddof=1)) if len(accuracies) > 1 else None,
                        "items_interval": list(statistics.bootstrap_interval(share)),
                        **statistics.run_intervals(accuracies, share)}
        groups[name]["share"] = share
    a, b = groups["zoo"], groups["reference"]
    runs = statistics.run_level_test(a["accuracies"], b["accuracies"], a["share"], b["share"])
    items = statistics.paired_bootstrap(a["share"], b["share"])
    for group in groups.values():
        group.pop("share")
    return {"groups": groups, "runs": runs, "items": items}


def interval(bounds, scale=100.0):
    return "-" if not bounds else f"[{scale * bounds[0]:.2f}, {scale * bounds[1]:.2f}]"


def report(comparison):
    """The comparison's lines."""
    lines = []
    for name, group in comparison["groups"].items():
        accuracies = ", ".join(f"{100 * a:.2f}" for a in group["accuracies"])
        std = "-" if group["std"] is None else f"{100 * group['std']:.2f}"
        lines.append(f"{name:9s} test accuracy {100 * group['mean']:.2f} ± {std} (runs {accuracies}); 95% interval of "
                     f"the mean {interval(group['mean_interval'])}, of one more run "
                     f"{interval(group['prediction_interval'])}, items only {interval(group['items_interval'])}")
    runs, items = comparison["runs"], comparison["items"]
    if runs:
        needed = runs["seeds_needed"]
        lines.append(f"zoo - reference: {100 * runs['difference']:+.2f} points; runs' test (seeds + items): "
                     f"95% interval {interval(runs['interval'])}, p {runs['p_value']:.3g}; "
                     f"items only (paired bootstrap): {interval(items['interval'])}, p {items['p_value']:.3g}; "
                     "seeds per side to resolve a difference this large: "
                     f"{needed if needed else 'none would reach 80% power (the items alone)'}")
        inside = runs["interval"][0] <= 0 <= runs["interval"][1]
        ahead = "zoo" if runs["difference"] > 0 else "reference"
        lines.append("the difference's interval holds 0: the two implementations are level on this budget" if inside
                     else f"the difference's interval leaves 0 out: the {ahead} is ahead")
    return lines


def record(args, runs, comparison, dropout, pairs):
    """With `--record`: the figures of the zoo against the reference with `dropout` in
    `results/esim_level/<machine id>.jsonl` (`zoo.measurements.record`)."""
    from zoo.measurements import machine as measured_machine

    figures = {}
    for side in ("zoo", "reference"):
        accuracies = [r[side if side == "zoo" else dropout]["test_accuracy"] for r in runs]
        figures[f"{side}/test_accuracy"] = accuracies  # the seeds' spread (median, min, max)
        figures[f"{side}/test_accuracy_mean"] = [float(np.mean(accuracies))]  # what the statistics compare
    if comparison["runs"]:
        figures["difference/runs_interval_low"] = [comparison["runs"]["interval"][0]]
        figures["difference/runs_interval_high"] = [comparison["runs"]["interval"][1]]
        figures["difference/runs_p_value"] = [comparison["runs"]["p_value"]]
    torch = next((r[dropout]["torch"] for r in runs), None)
    save(args, "esim_level", figures, measured_machine.describe(0), extra_versions={"torch": torch} if torch else None,
         notes=f"{pairs} training pairs, hidden size {args.hidden_size}, {args.epochs} epochs, {args.seeds} seeds"
               + ("" if dropout == "sequence" else ", the reference's dropout one mask an element"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="snli_1.0_dev_tokens folder or SNLI jsonl file")
    parser.add_argument("--reference", required=True, help="a checkout of github.com/coetaur0/ESIM (holding esim/)")
    parser.add_argument("--torch-python", required=True, help="the python of an environment with PyTorch")
    parser.add_argument("--train", type=int, default=3000, help="training pairs (0: all the rest)")
    parser.add_argument("--dev", type=int, default=800)
    parser.add_argument("--holdout", type=int, default=1842, help="pairs held out as the test set")
    parser.add_argument("--hidden-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch's threads")
    parser.add_argument("--embeddings", default="glove-6b-50d")
    parser.add_argument("--reference-dropout", nargs="+", choices=REFERENCE_DROPOUT, default=["sequence"],
                        help="the reference's dropout masks: 'sequence' (its RNNDropout, one mask a sentence, as it "
                             "ships), 'element' (one an element, its commented alternative, as the zoo's); both: "
                             "each compared with the same zoo runs")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    add_record_options(parser)
    args = parser.parse_args(argv)
    if not os.path.isdir(os.path.join(args.reference, "esim")):
        parser.error(f"--reference {args.reference}: no esim/ folder (a checkout of github.com/coetaur0/ESIM)")
    if not os.path.exists(args.torch_python):
        parser.error(f"--torch-python {args.torch_python}: no such file")

    train, dev, test, skipped = split_pairs(args.data, args.holdout, args.dev, args.train)
    print(f"machine: {machine()}")
    print(f"data: {len(train)} training pairs, {len(dev)} dev, {len(test)} test ({skipped} without gold label "
          f"skipped); vectors {args.embeddings}; hidden size {args.hidden_size}; {args.epochs} epochs; "
          f"{args.seeds} seeds each", flush=True)
    zoo_correct, reference_correct, runs = [], {d: [] for d in args.reference_dropout}, []
    gold = np.asarray([e["label"] for e in test])
    with tempfile.TemporaryDirectory(prefix="esim-vs-reference-") as work_dir:
        args.data_dir = os.path.join(work_dir, "data")
        write_split_files(args.data_dir, {"train": train, "dev": dev, "test": test})
        for seed in range(args.seeds):
            started = time.time()
            result, correct = zoo_run(args.data_dir, work_dir, seed, args)
            zoo_seconds = time.time() - started
            inputs_path = os.path.join(work_dir, f"reference-{seed}.npz")
            reference_inputs(result, {"train": train, "dev": dev, "test": test}, seed, args, inputs_path)
            zoo_correct.append(correct)
            results = result.results
            runs.append({"seed": seed, "zoo": {"test_accuracy": float(correct.mean()),
                                               "best_epoch": results.best_epoch,
                                               "losses": [e.get("loss") for e in results.history],
                                               "seconds": round(zoo_seconds)}})
            line = (f"seed {seed}: zoo {100 * runs[-1]['zoo']['test_accuracy']:.2f} (best epoch "
                    f"{runs[-1]['zoo']['best_epoch']})")
            for dropout in args.reference_dropout:
                started = time.time()
                reference = reference_run(inputs_path, seed, args, dropout)
                reference_correct[dropout].append(np.asarray(reference["test_predictions"]) == gold)
                runs[-1][dropout] = {"test_accuracy": float(reference_correct[dropout][-1].mean()),
                                     "best_epoch": reference["best_epoch"],
                                     "losses": [e["loss"] for e in reference["history"]],
                                     "seconds": round(time.time() - started), "torch": reference["torch"]}
                line += (f", reference ({dropout} dropout) {100 * runs[-1][dropout]['test_accuracy']:.2f} (best epoch "
                         f"{reference['best_epoch']})")
            print(line, flush=True)
    comparisons = {}
    for dropout in args.reference_dropout:
        comparisons[dropout] = comparison = compare_groups(zoo_correct, reference_correct[dropout])
        print(f"the reference with its dropout masks one a{'n' if dropout == 'element' else ''} {dropout}:")
        for line in report(comparison):
            print(line)
        record(args, runs, comparison, dropout, len(train))
    if args.json:
        from zoo import fileio

        fileio.write_json(args.json, {"machine": machine(), "arguments": {k: v for k, v in vars(args).items()
                                                                          if k != "data_dir"},
                                      "runs": runs, "comparisons": comparisons})
    return 0


if __name__ == "__main__":
    sys.exit(main())
