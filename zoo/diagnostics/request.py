"""What the diagnostics suite is asked to run: `DiagnosticsRequest`, built by the command line
(`zoo.commands.options.diagnostics_request`) or in Python, and `run_diagnostics`.

```python
request = DiagnosticsRequest(suite="diagnostics", hans="heuristics_evaluation_set.txt")
report = run_diagnostics(request, predictor, out_dir="runs/esim/diagnostics", logdir="runs/esim/logs",
                         test_accuracy=0.88)
```
"""

import dataclasses
import os
from typing import Optional

from zoo.data.corpora import load_corpus
from zoo.diagnostics.suite import run_suite
from zoo.runs.record import load_record

SUITES = ("diagnostics",)
# request field -> set name of `run_suite`
FILE_OPTIONS = {"breaking_nli": "breaking_nli", "hans": "hans", "snli_hard": "snli_hard",
                "stress_tests": "stress_tests", "anli": "anli"}
FILE_ONLY = ("breaking_nli", "hans", "snli_hard")  # one file each (the others may be folders)
HYPOTHESIS_ONLY_MODEL = "hypothesis_only"


def option_name(field):
    """The command-line option of a request field (`hypothesis_only` -> `--hypothesis-only`)."""
    return f"--{field.replace('_', '-')}"


@dataclasses.dataclass(frozen=True)
class DiagnosticsRequest:
    """The diagnostics to run beside an evaluation.

    Attributes:
        suite: `"diagnostics"` to run the suite, None not to (then no set may be given).
        breaking_nli, hans, snli_hard: each set's file; stress_tests: its folder; anli: a file, a folder or
            `"tfds"` (None: the set is skipped).
        hypothesis_only: a run of the `hypothesis_only` model the artifacts report compares the model with.
        behaviour: run the generated behaviour tests.
        data_source: the evaluated data (`--dataset` / `--data-dir`), whose test and train roles the artifacts
            report scores and fits on; fields, labels: how to read it.
        batch_size: pairs per model call.
    """

    suite: Optional[str] = None
    breaking_nli: Optional[str] = None
    hans: Optional[str] = None
    snli_hard: Optional[str] = None
    stress_tests: Optional[str] = None
    anli: Optional[str] = None
    hypothesis_only: Optional[str] = None
    behaviour: bool = True
    data_source: Optional[str] = None
    fields: Optional[str] = None
    labels: Optional[str] = None
    batch_size: Optional[int] = None

    def given_options(self):
        """The diagnostics options given, as the command line names them."""
        flags = [option_name(f) for f in (*FILE_OPTIONS, "hypothesis_only") if getattr(self, f) is not None]
        if not self.behaviour:
            flags.append("--no-behaviour")
        return flags

    def check(self):
        """Raises `ValueError` naming the option: a set without `--suite diagnostics`, a folder where a set
        is one file, a `--hypothesis-only` that is not a run of the hypothesis-only model."""
        if self.suite is None:
            flags = self.given_options()
            if flags:
                raise ValueError(f"{flags[0]} needs --suite diagnostics")
            return
        if self.suite not in SUITES:
            raise ValueError(f"--suite must be one of {', '.join(SUITES)}, got {self.suite!r}")
        for field in FILE_ONLY:
            path = getattr(self, field)
            if path is not None and os.path.isdir(path):
                raise ValueError(f"{option_name(field)} {path}: a folder; give the set's file")
        if self.hypothesis_only is not None:
            check_hypothesis_only_run(self.hypothesis_only)

    def sets(self, test_examples=None, train_examples=None):
        """The `sets` argument of `run_suite`.

        The artifacts report scores `test_examples` (default: the test role of `data_source`) and fits the
        lexical-overlap baseline on `train_examples` (default: that data's train role; none: the fixed rule).
        Without test pairs it is skipped.
        """
        sets = {name: getattr(self, field) for field, name in FILE_OPTIONS.items() if getattr(self, field) is not None}
        sets["behaviour"] = self.behaviour
        test_source = train_source = None
        if test_examples is None:
            test_examples, loaded_train, test_source, train_source = self._evaluated_data()
            if train_examples is None:
                train_examples = loaded_train
            else:
                train_source = None
        if test_examples:
            sets["artifacts"] = {"test": list(test_examples), "train": list(train_examples) if train_examples else None,
                                 "hypothesis_only": self.hypothesis_only,
                                 "test_source": test_source or "(evaluated pairs)",
                                 "train_source": train_source if train_examples else None}
        elif self.hypothesis_only:
            raise ValueError("--hypothesis-only: the artifacts report needs labelled test pairs (--dataset or "
                             "--data-dir)")
        return sets

    def _evaluated_data(self):
        """The test and train examples of `data_source`, and their names."""
        if self.data_source is None:
            return None, None, None, None
        splits, corpus = load_corpus(self.data_source, fields=self.fields, labels=self.labels)
        roles = corpus["roles"]

        def role(name):
            split = roles.get(name)
            return (splits[split], f"{self.data_source} [{split}]") if split and splits.get(split) else (None, None)

        test, test_source = role("test")
        train, train_source = role("train")
        return test, train, test_source, train_source


def check_hypothesis_only_run(run_dir):
    """Raises `ValueError` (naming `--hypothesis-only`) unless `run_dir` is a run of the hypothesis-only
    model: another model would be reported as the hypothesis-only baseline."""
    if not os.path.isdir(run_dir):
        raise ValueError(f"--hypothesis-only: {run_dir!r} is not a run directory")
    try:
        model = load_record(run_dir).model
    except (OSError, ValueError) as error:
        raise ValueError(f"--hypothesis-only: {error}") from None
    if model != HYPOTHESIS_ONLY_MODEL:
        raise ValueError(f"--hypothesis-only {run_dir} is a {model!r} run; the baseline is a run of the "
                         f"{HYPOTHESIS_ONLY_MODEL} model (train.py --model {HYPOTHESIS_ONLY_MODEL})")


def run_diagnostics(request, predictor, out_dir, logdir, test_accuracy, *, test_examples=None,
                    train_examples=None, step=0):
    """Runs the suite as `request` says; None when it asks for no suite.

    Args:
        request: the `DiagnosticsRequest`.
        predictor: the model (`zoo.export.predictor.RunPredictor`, `SavedModelPredictor`, ...).
        out_dir: folder for `diagnostics.json` and the PNGs (None: not written).
        logdir: TensorBoard log folder (scalars under its `diagnostics` run; None: not logged).
        test_accuracy: the full test set's accuracy (shown beside SNLI hard's), or None.
        test_examples, train_examples: the labelled pairs of the artifacts report when the caller has them
            loaded already (default: read from `request.data_source`).
        step: TensorBoard step.

    Returns:
        `run_suite`'s report, or None without a suite.

    Raises:
        ValueError: as `DiagnosticsRequest.check`, or a file that does not fit its set's schema
            (`DataFormatError`: `FILE:LINE: ...`).
        RuntimeError: `DataUnavailableError`, a missing file or folder.
    """
    request.check()
    if request.suite is None:
        return None
    sets = request.sets(test_examples, train_examples)
    return run_suite(predictor, sets, out_dir=out_dir, logdir=logdir, test_accuracy=test_accuracy, step=step,
                     batch_size=request.batch_size or 256)
