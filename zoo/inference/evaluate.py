"""Scoring a trained run, an exported SavedModel or TFLite model, or a preset, on any labelled NLI data:
`evaluate(EvaluateRequest(...))` returns an `Evaluation`, the typed report it also writes as JSON (beside the
model, `RUN/evaluations/NAME.json`, or at `output`). `nli-zoo evaluate` (and `evaluate.py`) build the request
from their flags, call this and print the record.

```python
import zoo

evaluation = zoo.evaluate(zoo.EvaluateRequest(run_dir="runs/esim", dataset="snli_sample", quiet=True))
evaluation.accuracy("test"), evaluation.results["test"]["confusion_matrix"], evaluation.output
print(evaluation.format_scores())
```
What it does is said through this module's logger (`[evaluate]`; the data's lines `[data]`): the run's own
data where none was given, the pairs cut at the model's maximum lengths (WARNING), an unfinished run.
"""

import contextlib
import dataclasses
import logging
import os
import re
import sys
import time
import warnings
from typing import Optional

from zoo.data.corpora import ROLES, check_source, describe, load_corpus
from zoo.data.readers import DataFormatError, DataUnavailableError
from zoo.diagnostics.report import format_report
from zoo.diagnostics.request import DiagnosticsRequest, run_diagnostics
from zoo.errors import UserError as EvaluateError
from zoo.fileio import CorruptFileError, LockedError, write_json
from zoo.quiet import import_tensorflow
from zoo.runs import layout
from zoo.runs.evaluation import format_scores, say_if_near_chance
from zoo.runs.kinds import MODEL_FLAGS, check_model
from zoo.runs.record import load_record
from zoo.runs.targets import check_output
from zoo.settings import values

logger = logging.getLogger(__name__)
data_logger = logger.getChild("data")  # what was read: `[data] ...`


@dataclasses.dataclass(frozen=True)
class EvaluateRequest:
    """What an evaluation is asked to do (`nli-zoo evaluate` builds it from its flags).

    Attributes:
        run_dir, saved_model, tflite, preset: the model (exactly one).
        dataset, data_dir: the data (`data_dir`, a path, wins); split: a role, a corpus split or `"all"`.
            With `run_dir` and neither, the run's own data (`with_run_data`).
        fields, labels, roles: how to read an NLI file, which split plays which role (roles: a run's own).
        max_examples: score only the first N pairs of each split.
        batch_size: pairs per batch (None: the run's, or 256).
        output: the report's path, or a folder for its default name (None: beside the model).
        quiet: no progress bar while scoring.
        diagnostics: the `DiagnosticsRequest` run beside the scores.
    """

    run_dir: Optional[str] = None
    saved_model: Optional[str] = None
    tflite: Optional[str] = None
    preset: Optional[str] = None
    dataset: Optional[str] = None
    data_dir: Optional[str] = None
    split: str = "test"
    fields: Optional[str] = None
    labels: Optional[str] = None
    roles: Optional[str] = None
    max_examples: Optional[int] = None
    batch_size: Optional[int] = None
    output: Optional[str] = None
    quiet: bool = False
    diagnostics: DiagnosticsRequest = DiagnosticsRequest()

    @property
    def source(self):
        """The data to score: `data_dir`, else `dataset` (None: none, only the diagnostics)."""
        return self.data_dir or self.dataset

    @property
    def model_path(self):
        """The SavedModel, TFLite or preset path (None for a run)."""
        return self.saved_model or self.tflite or self.preset

    @property
    def model(self):
        """`(kind, path)` of the model to score."""
        given = [(k, p) for k, p in (("run", self.run_dir), ("saved_model", self.saved_model),
                                     ("tflite", self.tflite), ("preset", self.preset)) if p]
        if len(given) != 1:
            raise EvaluateError(f"give exactly one model ({', '.join(MODEL_FLAGS.values())}), not {len(given)}")
        return given[0]

    def with_run_data(self):
        """The request with the run's own data where no data was given (`--run-dir` alone): the corpus, the
        way its files were read and its roles as the run's `config.json` records them, and the run's cap on
        dev and test pairs unless `--max-examples` is given, so that the run's test score is scored again."""
        if self.source or not self.run_dir:
            return self
        data = load_record(self.run_dir).data
        if data is None:
            return self
        logger.info(f"no --dataset or --data-dir: the run's own data, {data.source}")
        return dataclasses.replace(self, dataset=data.source, fields=self.fields or data.fields,
                                   labels=self.labels or data.labels, roles=data.roles,
                                   max_examples=self.max_examples or data.max_eval_examples)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What an evaluation found, typed: the report `evaluate` returns and writes (`to_json`).

    Attributes:
        model: the model's name (a run's registered model; an export's folder name).
        results: `{split: scores}` (`zoo.runs.evaluation.scores`: `"accuracy"`, `"examples"`,
            `"per_class_accuracy"`, `"confusion_matrix"`, `"per_genre"` where the data has genres), in the
            order scored.
        run_dir, saved_model, tflite, preset: what was scored (one of them).
        inputs: `{split: counts}` of the pairs cut at the model's maximum lengths and the empty sentences.
        source, corpus, roles, skipped: the data read (`zoo.data.corpora.load_corpus`'s report).
        diagnostics: the diagnostics suite's report (`zoo.diagnostics`), None without `--suite`;
            diagnostics_file: its JSON.
        seconds: the evaluation's time; output: the report written (None: no split was scored).
    """

    model: str
    results: dict
    run_dir: Optional[str] = None
    saved_model: Optional[str] = None
    tflite: Optional[str] = None
    preset: Optional[str] = None
    inputs: Optional[dict] = None
    source: Optional[str] = None
    corpus: Optional[str] = None
    roles: Optional[dict] = None
    skipped: Optional[dict] = None
    diagnostics: Optional[dict] = None
    diagnostics_file: Optional[str] = None
    seconds: float = 0.0
    output: Optional[str] = None

    def accuracy(self, split):
        """The accuracy on `split` (a split scored)."""
        return self.results[split]["accuracy"]

    def format_scores(self):
        """Every split's scores as printable lines: accuracy, the confusion matrix with per-class accuracy,
        the genres (`zoo.runs.evaluation.format_scores`), titled with the model, the data and the split."""
        return "\n".join(format_scores(scores, title=f"{self.model} on {self.source} [{split}]:")
                         for split, scores in self.results.items())

    def format_diagnostics(self):
        """The diagnostics suite's tables ("" without `--suite`)."""
        return format_report(self.diagnostics) if self.diagnostics is not None else ""

    def to_json(self):
        """The report as written: `model`, `run_dir`, `saved_model`, `results`, then what was given."""
        written = {"model": self.model, "run_dir": self.run_dir, "saved_model": self.saved_model,
                   "results": self.results}
        for kind in ("tflite", "preset"):
            if getattr(self, kind):
                written[kind] = getattr(self, kind)  # what was scored, whatever its kind
        if self.inputs:
            written["inputs"] = self.inputs
        if self.source is not None:
            written.update(source=self.source, corpus=self.corpus, roles=self.roles, skipped=self.skipped)
        if self.diagnostics_file is not None:
            written["diagnostics"] = self.diagnostics_file
        written["seconds"] = self.seconds
        return written


def check_request(request):
    """What can be checked before anything is loaded (and before TensorFlow starts): the model's path holds
    that kind of model, there is data to score (the run's own where none is given), the data set is known
    or its path exists, and the diagnostics' options.

    Returns:
        the request, with the run's own data where it had none.

    Raises:
        EvaluateError: one line naming the option.
    """
    check_model(*request.model)
    if request.output:  # never onto a file of the model, of the data, or into another kind of folder
        check_output(request.output, "report", "--output", inputs=report_inputs(request))
    request = request.with_run_data()
    if not request.source and not request.diagnostics.suite:
        raise EvaluateError("say what to score: --dataset or --data-dir (or --suite diagnostics)")
    try:
        if request.source:
            check_source(request.source, request.fields, request.labels, request.roles)
        request.diagnostics.check()  # before any model is loaded or any pair scored
    except (DataUnavailableError, ValueError) as error:
        raise EvaluateError(str(error)) from None
    return request


def report_inputs(request):
    """The files and folders the evaluation reads (the report must land on none of them)."""
    d = request.diagnostics
    return [request.data_dir, d.breaking_nli, d.hans, d.snli_hard, d.stress_tests, d.anli, d.hypothesis_only]


def progress_verbosity(request):
    """Keras's `verbose` for scoring: none with `quiet`, a progress bar on a terminal, else one line
    (no carriage returns and escape codes in a log file)."""
    if request.quiet:
        return 0
    return 1 if sys.stdout.isatty() else 2


def load_data(request):
    """The splits to score: `[(name, examples)]`, and the corpus report."""
    source, split = request.source, request.split
    try:
        splits, report = load_corpus(source, fields=request.fields, labels=request.labels,
                                     roles=request.roles)
    except (RuntimeError, ValueError, OSError) as error:
        what = "the data" if str(source) in str(error) else repr(source)
        raise EvaluateError(f"cannot load {what}: {error}") from None
    for line in describe(report):
        data_logger.info(line)
    role = "validation" if split == "dev" else split
    if split == "all":
        chosen = list(splits)
    elif len(splits) == 1:
        chosen = list(splits)  # one file: scored whole, whatever --split says
    elif split in splits:
        chosen = [split]
    elif role in ROLES and report["roles"].get(role):
        chosen = [report["roles"][role]]
    else:
        raise EvaluateError(f"{source!r} has no split {split!r}; its splits: {', '.join(splits)} "
                            f"(roles: {', '.join(f'{k}={v}' for k, v in report['roles'].items() if v)}), or 'all'")
    selected = []
    for name in chosen:
        examples = splits[name][:request.max_examples] if request.max_examples is not None else splits[name]
        if len(examples) < len(splits[name]):
            data_logger.info(f"{name}: scoring the first {len(examples):,} of {len(splits[name]):,} pairs "
                             "(--max-examples)")
        if not examples:
            raise EvaluateError(f"the split {name!r} of {source!r} has no labelled pairs")
        selected.append((name, examples))
    return selected, report


def evaluate(request):
    """Loads the model and the data, scores each split (and runs the diagnostics suite when asked), and
    writes the report.

    Args:
        request: the `EvaluateRequest`.

    Returns:
        the `Evaluation`.

    Raises:
        zoo.errors.UserError: a request that cannot be done, in one line naming the option or the file
            (`zoo.fileio.CorruptFileError` for a damaged file of a run).
    """
    started = time.time()
    request = check_request(request)
    import_tensorflow()  # its notices filtered (zoo.quiet)
    warnings.filterwarnings("ignore", message="Your input ran out of data")  # datasets of unknown length
    # Deferred: these import TensorFlow.
    from zoo.predictors import open_predictor
    from zoo.runs.datasets import describe_length_notes

    kind, path = request.model
    try:
        predictor = open_predictor(path, kind=kind)
    except (FileNotFoundError, OSError, ValueError, EvaluateError) as error:
        raise EvaluateError(str(error)) from None
    note = predictor.run.progress() if kind == "run" else None  # a run still training, or stopped: said
    if note:
        logger.warning(note)
    if request.run_dir:
        name, base = predictor.name, request.run_dir
    else:
        name = os.path.basename(os.path.normpath(path)) if "://" not in path else path.rsplit("/", 1)[-1]
        base = path if os.path.isdir(path) else (os.path.dirname(os.path.abspath(path)) if "://" not in path
                                                 else os.path.join("evaluations", name))
    selected, report = load_data(request) if request.source else ([], None)
    results, notes = {}, {}
    for split, examples in selected:
        # Pairs cut at the model's maximum lengths, empty sentences: counted, whatever the kind of model.
        counted = predictor.length_notes([(e["premise"], e["hypothesis"]) for e in examples])
        if counted is not None:
            notes[split] = counted
            line = describe_length_notes(counted)
            if line:
                logger.warning(f"{split}: {line}")
        try:
            with counted_once(kind, counted):  # batch size None: the run's, or 256
                results[split] = predictor.evaluate(examples, batch_size=request.batch_size,
                                                    verbose=progress_verbosity(request))
        except ValueError as error:  # e.g. a malformed parse the SavedModel rejects
            raise EvaluateError(f"{split}: {error}") from None
    say_if_near_chance({split: result["accuracy"] for split, result in results.items()})
    data = dict(source=report["source"], corpus=report["corpus"], roles=report["roles"],
                skipped=report["skipped"]) if report is not None else {}
    diagnostics = diagnose(request, predictor, base, results, report)
    evaluation = Evaluation(
        model=name, results=results, run_dir=request.run_dir, saved_model=request.saved_model,
        tflite=path if kind == "tflite" else None, preset=path if kind == "preset" else None, inputs=notes or None,
        **data, diagnostics=diagnostics,
        diagnostics_file=os.path.join(base, "evaluations", "diagnostics.json") if diagnostics is not None else None,
        seconds=time.time() - started)
    if not results:
        return evaluation
    file_name = f"{slug(report['source'])}-{'-'.join(results)}.json"
    output = values.report_file(request.output, file_name) if request.output else \
        os.path.join(base, "evaluations", file_name)
    check_output(output, "report", "--output", inputs=report_inputs(request))
    write_report(output, evaluation.to_json(), request.run_dir)
    return dataclasses.replace(evaluation, output=output)


def counted_once(kind, notes):
    """Where the evaluation has counted the cut pairs and empty sentences itself (`notes`), the block runs
    without the SavedModel's own line about them (one line per fact)."""
    if kind != "saved_model" or notes is None:
        return contextlib.nullcontext()
    from zoo.export.saved_model import without_cut_notes  # deferred: imports TensorFlow, started by now

    return without_cut_notes()


def diagnose(request, predictor, base, results, report):
    """`--suite diagnostics`: the suite's tables beside the model's own test accuracy (that of the scored
    test split, else the run's results.json), into BASE/evaluations and, for a run, its TensorBoard logs."""
    if request.diagnostics.suite is None:
        return None
    try:
        run_results = predictor.run.results if request.run_dir else None
    except CorruptFileError as error:
        raise EvaluateError(str(error)) from None
    test_accuracy = None
    if report is not None and report["roles"].get("test") in results:
        test_accuracy = results[report["roles"]["test"]]["accuracy"]
    elif request.run_dir:
        test_accuracy = run_results.test_accuracy if run_results is not None else None
    logdir = os.path.join(request.run_dir, "logs") if request.run_dir else None
    step = len(run_results.history) if run_results is not None else 0
    try:
        return run_diagnostics(request.diagnostics, predictor, os.path.join(base, "evaluations"), logdir,
                               test_accuracy, step=step)
    except (DataFormatError, DataUnavailableError, ValueError, OSError) as error:
        raise EvaluateError(str(error)) from None


def write_report(output, written, run_dir):
    """Writes the report atomically; into a run directory only while no other process writes that run."""
    inside = run_dir and os.path.abspath(output).startswith(os.path.abspath(run_dir) + os.sep)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    if not inside:
        write_json(output, written)
        return
    try:
        with layout.lock(run_dir):
            write_json(output, written)
    except LockedError as error:
        raise EvaluateError(f"{error}; or write the report elsewhere with --output") from None


def slug(source):
    """A file-name part for a data source: `~/data/multinli_1.0.zip` -> `multinli_1.0`."""
    base = os.path.basename(os.path.normpath(str(source))) or str(source)
    base = re.sub(r"\.(zip|jsonl|json|tsv|txt|csv)$", "", base)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base) or "data"
