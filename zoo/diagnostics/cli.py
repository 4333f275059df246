"""Command-line options of the diagnostics suite, for `evaluate.py` (or any script with a predictor).

```python
parser = argparse.ArgumentParser()
add_diagnostics_options(parser)
args = parser.parse_args(["--suite", "diagnostics", "--hans", "heuristics_evaluation_set.txt"])
report = run_from_args(args, predictor, out_dir="runs/esim/diagnostics", logdir="runs/esim/logs",
                       test_accuracy=0.88)
```
"""

import os

SUITES = ("diagnostics",)
# option dest -> set name of `run_suite`
FILE_OPTIONS = {"breaking_nli": "breaking_nli", "hans": "hans", "snli_hard": "snli_hard",
                "stress_tests": "stress_tests", "anli": "anli"}


def add_diagnostics_options(parser):
    """Adds `--suite {diagnostics}` and the options of its sets to an argparse parser; returns the group."""
    group = parser.add_argument_group("diagnostics", "with --suite diagnostics: challenge sets, behaviour tests "
                                      "and baselines (docs/diagnostics.md); sets not given are skipped")
    group.add_argument("--suite", choices=SUITES, default=None,
                       help="also run the diagnostics suite: a table per set, DIR/diagnostics.json, a PNG per "
                            "set and TensorBoard scalars")
    group.add_argument("--breaking-nli", metavar="FILE", default=None,
                       help="Breaking NLI's dataset.jsonl (Glockner et al. 2018): accuracy per category")
    group.add_argument("--hans", metavar="FILE", default=None,
                       help="HANS's heuristics_evaluation_set.txt (McCoy et al. 2019): accuracy per heuristic and "
                            "subcase, entailment vs non-entailment")
    group.add_argument("--snli-hard", metavar="FILE", default=None,
                       help="snli_1.0_test_hard.jsonl (Gururangan et al. 2018), beside the full test accuracy")
    group.add_argument("--stress-tests", metavar="DIR", default=None,
                       help="the Stress_Tests folder of Naik et al. 2018 (or its parent): accuracy per test, "
                            "matched / mismatched")
    group.add_argument("--anli", metavar="FILE|DIR|tfds", default=None,
                       help="ANLI (Nie et al. 2020): the release folder or zip (R1-R3 test.jsonl), one round's "
                            "file, or 'tfds' (tensorflow-datasets anli): accuracy per round")
    group.add_argument("--hypothesis-only", metavar="RUN", default=None,
                       help="a run of the hypothesis_only model: the artifacts report compares the model with it")
    group.add_argument("--no-behaviour", action="store_true",
                       help="skip the generated behaviour tests (negation, antonyms, hypernyms, numbers, ...)")
    return group


def _diagnostics_flags(args):
    flags = [f"--{dest.replace('_', '-')}" for dest in (*FILE_OPTIONS, "hypothesis_only")
             if getattr(args, dest, None) is not None]
    if getattr(args, "no_behaviour", False):
        flags.append("--no-behaviour")
    return flags


def _evaluated_data(args):
    """The test and train examples of the data `evaluate.py` scores (`--dataset` / `--data-dir`)."""
    source = getattr(args, "data_dir", None) or getattr(args, "dataset", None)
    if source is None:
        return None, None, None, None
    from zoo.data.corpora import load_corpus

    splits, corpus = load_corpus(source, fields=getattr(args, "fields", None), labels=getattr(args, "labels", None))
    roles = corpus["roles"]

    def role(name):
        split = roles.get(name)
        return (splits[split], f"{source} [{split}]") if split and splits.get(split) else (None, None)

    test, test_source = role("test")
    train, train_source = role("train")
    return test, train, test_source, train_source


def sets_from_args(args, test_examples=None, train_examples=None):
    """The `sets` argument of `run_suite` from parsed options.

    The artifacts report scores `test_examples` (default: the test role of the evaluated data,
    `--dataset` / `--data-dir`) and fits the lexical-overlap baseline on `train_examples` (default: that
    data's train role; none: the fixed rule). Without test pairs it is skipped.
    """
    sets = {name: getattr(args, dest, None) for dest, name in FILE_OPTIONS.items()}
    sets = {k: v for k, v in sets.items() if v is not None}
    sets["behaviour"] = not getattr(args, "no_behaviour", False)
    test_source = train_source = None
    if test_examples is None:
        test_examples, loaded_train, test_source, train_source = _evaluated_data(args)
        if train_examples is None:
            train_examples = loaded_train
        else:
            train_source = None
    if test_examples:
        sets["artifacts"] = {"test": list(test_examples), "train": list(train_examples) if train_examples else None,
                             "hypothesis_only": getattr(args, "hypothesis_only", None),
                             "test_source": test_source or "(evaluated pairs)",
                             "train_source": train_source if train_examples else None}
    elif getattr(args, "hypothesis_only", None):
        raise ValueError("--hypothesis-only: the artifacts report needs labelled test pairs (--dataset or --data-dir)")
    return sets


def run_from_args(args, predictor, out_dir, logdir, test_accuracy, *, test_examples=None, train_examples=None,
                  step=0):
    """Runs the suite as the parsed options say; None when `--suite` is not given.

    Args:
        args: parsed options (`add_diagnostics_options`, plus `--dataset` / `--data-dir`, `--fields`,
            `--labels`, `--batch-size` where the parser has them).
        predictor: the model (a `zoo.runs.predictor.Predictor`: `zoo.predictors.open_predictor`).
        out_dir: folder for `diagnostics.json` and the PNGs (None: not written).
        logdir: TensorBoard log folder (scalars under its `diagnostics` run; None: not logged).
        test_accuracy: the full test set's accuracy (shown beside SNLI hard's), or None.
        test_examples, train_examples: the labelled pairs of the artifacts report when the caller has them
            loaded already (default: read from `--dataset` / `--data-dir`).
        step: TensorBoard step.

    Returns:
        `run_suite`'s report, or None without `--suite`.

    Raises:
        ValueError: a diagnostics option without `--suite diagnostics` (the message names it), or a file that
            does not fit its set's schema (`DataFormatError`: `FILE:LINE: ...`).
        RuntimeError: `DataUnavailableError`, a missing file or folder.
    """
    if getattr(args, "suite", None) is None:
        flags = _diagnostics_flags(args)
        if flags:
            raise ValueError(f"{flags[0]} needs --suite diagnostics")
        return None
    from zoo.diagnostics.suite import run_suite

    hypothesis_only = getattr(args, "hypothesis_only", None)
    if hypothesis_only is not None and not os.path.isdir(hypothesis_only):
        raise ValueError(f"--hypothesis-only: {hypothesis_only!r} is not a run directory")
    sets = sets_from_args(args, test_examples, train_examples)
    batch_size = getattr(args, "batch_size", None) or 256
    return run_suite(predictor, sets, out_dir=out_dir, logdir=logdir, test_accuracy=test_accuracy, step=step,
                     batch_size=batch_size)
