"""Scores a trained run, an exported SavedModel or TFLite model, or a preset, on any labelled NLI data.

Example:
```
python evaluate.py --run-dir runs/esim --data-dir ~/multinli_1.0                 # its test role: dev_mismatched
python evaluate.py --run-dir runs/esim --data-dir ~/multinli_1.0 --split dev_matched
python evaluate.py --run-dir runs/esim --data-dir ~/SICK/SICK.txt --split all     # train, trial and test
python evaluate.py --run-dir runs/esim --data-dir breaking_nli/dataset.jsonl      # one file, scored whole
python evaluate.py --saved-model models/esim --dataset snli_sample
```
Prints accuracy, per-class accuracy, the confusion matrix (and accuracy per genre where the data has
genres) and writes them as JSON to RUN/evaluations/NAME.json (or `--output`). The work is done by
`zoo.runs.evaluation`; from Python: `zoo.load(run_dir).evaluate(examples)`.
"""

import contextlib
import dataclasses
import os
import re
import sys
import time
import warnings
from typing import Optional

from zoo.commands.options import add_corpus_options, add_diagnostics_options, diagnostics_request
from zoo.commands.parsing import (
    BATCH_SIZE,
    COUNT,
    FOLDER_TO_READ,
    PATH_TO_READ,
    REPORT,
    CommandParser,
    check_model,
    guarded,
)
from zoo.data.corpora import ROLES, check_source, describe, load_corpus
from zoo.data.readers import DataFormatError, DataUnavailableError
from zoo.diagnostics.request import DiagnosticsRequest, run_diagnostics
from zoo.errors import UserError as EvaluateError
from zoo.fileio import CorruptFileError, LockedError, write_json
from zoo.quiet import import_tensorflow
from zoo.runs import layout
from zoo.runs.evaluation import format_scores, say_if_near_chance
from zoo.runs.record import load_record
from zoo.runs.targets import check_output
from zoo.settings import values


@dataclasses.dataclass(frozen=True)
class EvaluateRequest:
    """What `evaluate.py` is asked to do (`request_from_args` builds it from the command line).

    Attributes:
        run_dir, saved_model, tflite, preset: the model (exactly one).
        dataset, data_dir: the data (`data_dir`, a path, wins); split: a role, a corpus split or `"all"`.
            With `run_dir` and neither, the run's own data (`with_run_data`).
        fields, labels, roles: how to read an NLI file, which split plays which role (roles: a run's own).
        max_examples: score only the first N pairs of each split.
        batch_size: pairs per batch (None: the run's, or 256).
        output: the report's path (None: beside the model).
        quiet: no progress output.
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
        return next((k, p) for k, p in (("run", self.run_dir), ("saved_model", self.saved_model),
                                        ("tflite", self.tflite), ("preset", self.preset)) if p)

    def with_run_data(self):
        """The request with the run's own data where no data was given (`--run-dir` alone): the corpus, the
        way its files were read and its roles as the run's `config.json` records them, and the run's cap on
        dev and test pairs unless `--max-examples` is given, so that the run's test score is scored again."""
        if self.source or not self.run_dir:
            return self
        data = load_record(self.run_dir).data
        if data is None:
            return self
        print(f"[evaluate] no --dataset or --data-dir: the run's own data, {data.source}", flush=True)
        return dataclasses.replace(self, dataset=data.source, fields=self.fields or data.fields,
                                   labels=self.labels or data.labels, roles=data.roles,
                                   max_examples=self.max_examples or data.max_eval_examples)


def request_from_args(args):
    """The `EvaluateRequest` of the parsed command line."""
    return EvaluateRequest(run_dir=args.run_dir, saved_model=args.saved_model, tflite=args.tflite,
                           preset=args.preset, dataset=args.dataset, data_dir=args.data_dir, split=args.split,
                           fields=args.fields, labels=args.labels, max_examples=args.max_examples,
                           batch_size=args.batch_size, output=args.output, quiet=args.quiet,
                           diagnostics=diagnostics_request(args))


def build_parser(prog="evaluate.py"):
    """The `evaluate.py` argument parser."""
    parser = CommandParser(prog=prog, description="Score a trained run or a SavedModel on "
                                     "labelled NLI pairs: accuracy, per-class accuracy, confusion matrix, genres.")
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--run-dir", type=FOLDER_TO_READ, help="a run directory written by train.py")
    model.add_argument("--saved-model", type=FOLDER_TO_READ,
                       help="an exported SavedModel: MODELS/NAME (latest version) or MODELS/NAME/N")
    model.add_argument("--tflite", type=PATH_TO_READ, help="a TFLite export (its folder or model.tflite)")
    model.add_argument("--preset", help="a preset: a folder written by export.py --format preset, hf://... or "
                                        "kaggle://...")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--dataset", help="'snli', 'multi_nli' (tensorflow-datasets) or 'snli_sample'")
    data.add_argument("--data-dir", type=PATH_TO_READ,
                      help="a corpus on disk: an snli_1.0 or multinli_1.0 folder or zip, SICK.txt, "
                           "a folder of NLI files, or one NLI file (.jsonl, .tsv, .csv)")
    parser.add_argument("--split", default="test",
                        help="a role (train, validation or dev, test; default test), one of the corpus' own "
                             "split names (e.g. dev_matched), or 'all'; a single file is one split")
    add_corpus_options(parser)
    parser.add_argument("--max-examples", type=COUNT, default=None, help="score only the first N pairs of each split")
    parser.add_argument("--batch-size", type=BATCH_SIZE, default=None,
                        help="pairs per batch (default: the run's batch size; 256 for a SavedModel)")
    parser.add_argument("--output", default=None, type=REPORT,
                        help="the JSON file to write, or a folder to write it into under its default name "
                             "(default RUN/evaluations/NAME.json, beside the run or the SavedModel)")
    add_diagnostics_options(parser)
    return parser


def main(argv=None, prog="evaluate.py"):
    """Runs `evaluate.py` with `argv`; returns the written report (a dict). User errors exit with status 2."""
    request = request_from_args(build_parser(prog).parse_args(argv))
    return guarded(prog, lambda: evaluate_command(request, prog), hint="write the report elsewhere with --output",
                   target=request.output or request.run_dir or request.saved_model or request.tflite)


def evaluate_command(request, prog):
    """`main` once the command line is parsed."""
    try:
        return evaluate(request)
    except (EvaluateError, CorruptFileError) as error:  # a damaged run file names itself in one line
        print(f"{prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def check_request(request):
    """What can be checked before anything is loaded (and before TensorFlow starts): the model's path holds
    that kind of model, there is data to score (the run's own where none is given), the data set is known
    or its path exists, and the diagnostics' options.

    Returns:
        the request, with the run's own data where it had none.

    Raises:
        EvaluateError: one line naming the option.
    """
    kind, path = request.model
    check_model(kind, path)
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
    """Keras's `verbose` for scoring: none with `--quiet`, a progress bar on a terminal, else one line
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
        print(f"[data] {line}", flush=True)
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
            print(f"[data] {name}: scoring the first {len(examples):,} of {len(splits[name]):,} pairs "
                  "(--max-examples)", flush=True)
        if not examples:
            raise EvaluateError(f"the split {name!r} of {source!r} has no labelled pairs")
        selected.append((name, examples))
    return selected, report


def evaluate(request):
    """Loads the model and the data, scores each split (and runs the diagnostics suite when asked), prints
    and writes the report.

    Args:
        request: the `EvaluateRequest`.
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
        print(f"[evaluate] {note}", flush=True)
    if request.run_dir:
        name, base = predictor.name, request.run_dir
    else:
        name = os.path.basename(os.path.normpath(path)) if "://" not in path else path.rsplit("/", 1)[-1]
        base = path if os.path.isdir(path) else (os.path.dirname(os.path.abspath(path)) if "://" not in path
                                                 else os.path.join("evaluations", name))
    score = lambda examples: predictor.evaluate(  # noqa: E731 (batch size None: the run's, or 256)
        examples, batch_size=request.batch_size, verbose=progress_verbosity(request))
    selected, report = load_data(request) if request.source else ([], None)
    results, notes = {}, {}
    for split, examples in selected:
        # Pairs cut at the model's maximum lengths, empty sentences: counted, whatever the kind of model.
        counted = predictor.length_notes([(e["premise"], e["hypothesis"]) for e in examples])
        if counted is not None:
            notes[split] = counted
            line = describe_length_notes(counted)
            if line:
                print(f"[evaluate] {split}: {line}", flush=True)
        try:
            with counted_once(kind, counted):
                results[split] = score(examples)
        except ValueError as error:  # e.g. a malformed parse the SavedModel rejects
            raise EvaluateError(f"{split}: {error}") from None
        print(format_scores(results[split], title=f"{name} on {report['source']} [{split}]:"), flush=True)
    say_if_near_chance({split: result["accuracy"] for split, result in results.items()})
    written = {"model": name, "run_dir": request.run_dir, "saved_model": request.saved_model, "results": results}
    if kind in ("tflite", "preset"):
        written[kind] = path  # what was scored, whatever its kind
    if notes:
        written["inputs"] = notes
    if report is not None:
        written.update(source=report["source"], corpus=report["corpus"], roles=report["roles"],
                       skipped=report["skipped"])
    diagnostics = diagnose(request, predictor, base, results, report)
    if diagnostics is not None:
        written["diagnostics"] = os.path.join(base, "evaluations", "diagnostics.json")
    written["seconds"] = time.time() - started
    if results:
        name = f"{slug(report['source'])}-{'-'.join(results)}.json"
        output = values.report_file(request.output, name) if request.output else os.path.join(base, "evaluations", name)
        check_output(output, "report", "--output", inputs=report_inputs(request))
        write_report(output, written, request.run_dir)
        print(f"[evaluate] written to {output}", flush=True)
    return written


def counted_once(kind, notes):
    """Where the command has counted the cut pairs and empty sentences itself (`notes`), the block runs without
    the SavedModel's own line about them (one line per fact)."""
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
