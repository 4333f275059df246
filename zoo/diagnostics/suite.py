"""`run_suite`: every diagnostic set given, read first (a malformed file stops before any prediction), then
scored, printed, written (`diagnostics.json`, one PNG per set) and logged to TensorBoard."""

import logging
import os

from zoo.data.corpora import by_role, load_corpus
from zoo.diagnostics import report as reporting
from zoo.diagnostics import sets as diagnostic_sets
from zoo.diagnostics.artifacts import run_artifacts
from zoo.diagnostics.behaviour import DEFAULT_SIZE, run_behaviour

logger = logging.getLogger(__name__)

# The sets in report order.
SETS = ("breaking_nli", "hans", "snli_hard", "stress_tests", "anli", "behaviour", "artifacts")
_FILE_SETS = {"breaking_nli": (diagnostic_sets.load_breaking_nli, diagnostic_sets.score_breaking_nli),
              "hans": (diagnostic_sets.load_hans, diagnostic_sets.score_hans),
              "snli_hard": (diagnostic_sets.load_snli_hard, diagnostic_sets.score_snli_hard),
              "stress_tests": (diagnostic_sets.load_stress_tests, diagnostic_sets.score_stress_tests),
              "anli": (diagnostic_sets.load_anli, diagnostic_sets.score_anli)}


def _given(value):
    return value is not None and value is not False


def _behaviour_options(value):
    options = {"seed": 0, "size": DEFAULT_SIZE}
    if isinstance(value, dict):
        unknown = set(value) - set(options)
        if unknown:
            raise ValueError(f"behaviour: unknown option(s) {', '.join(sorted(unknown))}; options: seed, size")
        options.update(value)
    return options


def _load_examples(value, what):
    """Examples given as a list, or a data source for `zoo.data.corpora.load_corpus` (its test / train role)."""
    if value is None or isinstance(value, (list, tuple)):
        return (list(value) if value is not None else None), ("(examples)" if value is not None else None)
    splits, corpus = load_corpus(value)
    role = "train" if what == "train" else "test"
    return by_role(splits, corpus, required=(role,))[role], f"{value} [{corpus['roles'][role]}]"


def _load_artifacts(value):
    """`{"test": examples or source, "train": examples or source (optional), "hypothesis_only": predictor or
    run directory (optional), "max_train": n (optional)}`."""
    if not isinstance(value, dict) or "test" not in value:
        raise ValueError("artifacts: expected a dict with 'test' (examples or a data source) and optionally "
                         "'train', 'hypothesis_only', 'max_train'")
    unknown = set(value) - {"test", "train", "hypothesis_only", "max_train", "test_source", "train_source"}
    if unknown:
        raise ValueError(f"artifacts: unknown key(s) {', '.join(sorted(unknown))}")
    test, test_source = _load_examples(value["test"], "test")
    train, train_source = _load_examples(value.get("train"), "train")
    other = value.get("hypothesis_only")
    if isinstance(other, (str, os.PathLike)):
        from zoo.predictors import open_predictor

        other = open_predictor(os.fspath(other), kind="run")
    return {"test": test, "train": train, "hypothesis_only": other,
            "max_train": value.get("max_train"), "test_source": value.get("test_source", test_source),
            "train_source": value.get("train_source", train_source)}


def run_suite(predictor, sets, out_dir=None, logdir=None, test_accuracy=None, step=0, examples=3, batch_size=256):
    """Scores a model on the diagnostic sets given and prints a table per set.

    Args:
        predictor: an object with `.labels` (entailment, neutral, contradiction in id order) and
            `.predict(pairs, batch_size=256)` answering `[{"label", "probabilities"}]`, e.g.
            `zoo.predictors.open_predictor(path)`.
        sets: `{"breaking_nli": PATH, "hans": PATH, "snli_hard": PATH, "stress_tests": DIR,
            "anli": PATH or "tfds" (or {"source", "split", "data_dir"}), "behaviour": True (or {"seed", "size"}),
            "artifacts": {"test": examples or source, "train": ..., "hypothesis_only": predictor or RUN}}`;
            a set that is missing, None or False is skipped and named in the report.
        out_dir: where to write `diagnostics.json` and `diagnostics_SET.png` (None: nothing written).
        logdir: TensorBoard log folder; the scalars go to its `diagnostics` run (None: not logged).
        test_accuracy: the model's accuracy on the full test set, shown beside SNLI hard's.
        step: the TensorBoard step (e.g. the training epoch), so that runs and epochs compare side by side.
        examples: failing examples kept per set (per behaviour test).
        batch_size: pairs per `predictor.predict` call.

    Returns:
        the report: `{"labels", "test_accuracy", "sets": {name: section}, "skipped": [names], "files": {...}}`.

    Raises:
        ValueError: an unknown set name; `zoo.data.readers.DataFormatError` (a ValueError, one line
        `FILE:LINE: ...` naming the field) for a file that does not fit its set's schema;
        `zoo.data.readers.DataUnavailableError` for a missing path or folder without the set's files.
    """
    unknown = set(sets) - set(SETS)
    if unknown:
        raise ValueError(f"unknown diagnostic set(s) {', '.join(sorted(unknown))}; sets: {', '.join(SETS)}")
    loaded = {}
    for name in SETS:  # read everything first: a bad file stops before any prediction
        value = sets.get(name)
        if not _given(value):
            continue
        if name in _FILE_SETS:
            loaded[name] = _FILE_SETS[name][0](value)
        elif name == "behaviour":
            loaded[name] = _behaviour_options(value)
        else:
            loaded[name] = _load_artifacts(value)
    report = {"labels": list(predictor.labels), "test_accuracy": test_accuracy, "sets": {},
              "skipped": [name for name in SETS if name not in loaded], "files": {}}
    for name, data in loaded.items():
        if name in _FILE_SETS:
            section = _FILE_SETS[name][1](predictor, data, examples=examples, batch_size=batch_size,
                                          test_accuracy=test_accuracy)
        elif name == "behaviour":
            section = run_behaviour(predictor, seed=data["seed"], size=data["size"], examples=examples,
                                    batch_size=batch_size)
        else:
            extra = {"max_train": data["max_train"]} if data["max_train"] else {}
            section = run_artifacts(predictor, data["test"], train=data["train"],
                                    hypothesis_only=data["hypothesis_only"], batch_size=batch_size,
                                    test_source=data["test_source"], train_source=data["train_source"], **extra)
        report["sets"][name] = section
    if out_dir is not None:
        report["files"]["charts"] = reporting.write_charts(report, out_dir)
        report["files"]["json"] = os.path.join(out_dir, reporting.JSON_FILE)
    if logdir is not None:
        report["files"]["tensorboard"] = reporting.write_scalars(report, logdir, step)
    if out_dir is not None:
        reporting.write_json(report, out_dir)
        logger.info(f"written to {report['files']['json']}")
    return report
