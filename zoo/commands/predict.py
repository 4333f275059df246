"""Predicts SNLI labels with a trained run, an exported SavedModel, a TFLite export or a preset.

Example:
```
python predict.py --run-dir runs/rocktaschel_wbw --premise "A man plays a guitar." --hypothesis "A man sleeps."
python predict.py --saved-model models/rocktaschel_wbw --input pairs.jsonl --output predictions.jsonl
python predict.py --tflite models/rocktaschel_wbw_tflite --premise "A man plays." --hypothesis "A man sleeps."
python predict.py --preset presets/rocktaschel_wbw --input pairs.jsonl     # or hf://OWNER/NAME, kaggle://...
python predict.py --run-dir runs/rocktaschel_wbw --premise "..." --hypothesis "..." --show-attention \
    --attention-png wbw.png
```
`--input` reads JSON lines with string fields `premise` and `hypothesis` (and, optionally,
`premise_binary_parse` and `hypothesis_binary_parse`: SNLI's binary parses, which the syntactic tree
models use; without them they use complete binary trees); the output has one line
`{"label": ..., "probabilities": {"entailment": ..., "neutral": ..., "contradiction": ...}}` per input
line, as `zoo.load(run_dir).predict`. For one pair, `--premise-parse` / `--hypothesis-parse` give the parses.
Pairs cut at the model's maximum lengths and empty sentences are counted in one line on stderr, for every
kind of model (`Predictor.length_notes`).
"""

import contextlib
import dataclasses
import json
import os
import sys
from typing import Optional

from zoo.commands.parsing import (
    BATCH_SIZE,
    FILE_TO_READ,
    FILE_TO_WRITE,
    FOLDER_TO_READ,
    PATH_TO_READ,
    THREADS,
    CommandParser,
    check_model,
    guarded,
)
from zoo.data.trees import TreeFormatError, parse_binary_parse
from zoo.errors import UserError
from zoo.fileio import CorruptFileError, atomic_write
from zoo.quiet import import_tensorflow
from zoo.runs.evaluation import say_if_near_chance
from zoo.runs.targets import check_output


class PredictError(UserError):
    """A user-facing error: printed as one line, exit status 2."""


@dataclasses.dataclass(frozen=True)
class PredictRequest:
    """What `predict.py` is asked to do (`request_from_args` builds it from the command line).

    Attributes:
        run_dir, saved_model, tflite, preset: the model (exactly one).
        premise, hypothesis, premise_parse, hypothesis_parse: one pair (and its binary parses).
        input, output: a JSON-lines file of pairs, and where its predictions go (None: stdout).
        batch_size: pairs per model call; num_threads: the TFLite interpreter's threads.
        show_attention, attention_png: explain the one pair as a text heatmap / a PNG.
        check: only check the model's files against the SHA-256 its manifest records, and that it loads.
    """

    run_dir: Optional[str] = None
    saved_model: Optional[str] = None
    tflite: Optional[str] = None
    preset: Optional[str] = None
    premise: Optional[str] = None
    hypothesis: Optional[str] = None
    premise_parse: str = ""
    hypothesis_parse: str = ""
    input: Optional[str] = None
    output: Optional[str] = None
    batch_size: int = 256
    num_threads: Optional[int] = None
    show_attention: bool = False
    attention_png: Optional[str] = None
    check: bool = False

    @property
    def model(self):
        """`(kind, path)` of the model."""
        return next((k, p) for k, p in (("run", self.run_dir), ("saved_model", self.saved_model),
                                        ("tflite", self.tflite), ("preset", self.preset)) if p)

    @property
    def explains(self):
        """Whether the pair's attention is shown or saved."""
        return bool(self.show_attention or self.attention_png)


def request_from_args(args):
    """The `PredictRequest` of the parsed command line."""
    return PredictRequest(**{f.name: getattr(args, f.name) for f in dataclasses.fields(PredictRequest)})


def build_parser(prog="predict.py"):
    """The `predict.py` argument parser."""
    parser = CommandParser(prog=prog, description="Predict SNLI labels of sentence pairs.",
                           messages_on_stderr=True)
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--run-dir", type=FOLDER_TO_READ, help="a run directory written by train.py")
    model.add_argument("--saved-model", type=FOLDER_TO_READ,
                       help="an exported SavedModel: MODELS/NAME (latest version) or MODELS/NAME/N")
    model.add_argument("--tflite", type=PATH_TO_READ,
                       help="a TFLite export of export.py: its folder or its model.tflite")
    model.add_argument("--preset", help="a preset: a folder written by export.py --format preset, hf://... or "
                                        "kaggle://...")
    parser.add_argument("--premise", help="the premise of one pair")
    parser.add_argument("--hypothesis", help="the hypothesis of one pair")
    parser.add_argument("--premise-parse", default="",
                        help="the premise's binary parse, e.g. \"( ( Two women ) ( are sleeping ) )\" (tree models)")
    parser.add_argument("--hypothesis-parse", default="", help="the hypothesis's binary parse (tree models)")
    parser.add_argument("--input", type=FILE_TO_READ,
                        help="a JSON-lines file of {\"premise\": ..., \"hypothesis\": ...}")
    parser.add_argument("--output", type=FILE_TO_WRITE,
                        help="with --input: write the predictions here (default stdout)")
    parser.add_argument("--batch-size", type=BATCH_SIZE, default=256, help="pairs per model call (default 256)")
    parser.add_argument("--num-threads", type=THREADS, default=None,
                        help="--tflite: the interpreter's threads (default: LiteRT's)")
    parser.add_argument("--show-attention", action="store_true",
                        help="print the alignment of the pair as a text heatmap")
    parser.add_argument("--attention-png", metavar="PATH", type=FILE_TO_WRITE,
                        help="save the alignment of the pair as a PNG")
    parser.add_argument("--check", action="store_true",
                        help="only check the model: its files against the SHA-256 its manifest records, and that it "
                             "loads (e.g. a SavedModel version before TF Serving serves it, which does not check)")
    return parser


PARSE_FIELDS = ("premise_binary_parse", "hypothesis_binary_parse")


def read_pairs(path):
    """Reads `(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)` tuples from a JSON-lines
    file (blank lines are skipped; missing parses are "").

    Raises:
        PredictError: a missing file, a line that is not UTF-8 text, not an object with string premise and
            hypothesis, a parse that is not a string or is malformed (the message starts with FILE:LINE).
    """
    try:
        with open(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except OSError as error:
        raise PredictError(f"cannot read {path}: {error}") from None
    pairs = []
    for number, raw in enumerate(raw_lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise PredictError(f"{path}:{number}: not UTF-8 text (byte {error.start + 1} of the line)") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise PredictError(f"{path}:{number}: not valid JSON ({error})") from None
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("premise", "hypothesis")):
            raise PredictError(f'{path}:{number}: expected an object with string fields "premise" and "hypothesis"')
        parses = []
        for field in PARSE_FIELDS:
            parse = record.get(field, "")
            if not isinstance(parse, str):
                raise PredictError(f'{path}:{number}: "{field}" must be a string')
            if parse.strip():
                try:
                    parse_binary_parse(parse, sentence=field)
                except TreeFormatError as error:
                    raise PredictError(f"{path}:{number}: {error}") from None
            parses.append(parse)
        pairs.append((record["premise"], record["hypothesis"], *parses))
    return pairs


def check_request(request):
    """Raises `PredictError` for inconsistent arguments, a sentence given on the command line that is not
    UTF-8 text (its bytes reach Python as lone surrogates), or a model path that holds no model of its kind
    (`zoo.runs.kinds.check_kind`; a run's damaged config.json raises `CorruptFileError`)."""
    single = request.premise is not None or request.hypothesis is not None
    if request.check:
        if single or request.input or request.explains:
            raise PredictError("--check checks the model alone: give no pairs with it")
        return
    if single and request.input:
        raise PredictError("give either --premise/--hypothesis or --input, not both")
    if not single and not request.input:
        raise PredictError("give --premise and --hypothesis, or --input FILE")
    if single and (request.premise is None or request.hypothesis is None):
        raise PredictError("--premise and --hypothesis go together")
    if request.input and request.explains:
        raise PredictError("--show-attention and --attention-png explain one pair: use --premise/--hypothesis")
    if request.input and (request.premise_parse or request.hypothesis_parse):
        raise PredictError("--premise-parse/--hypothesis-parse go with --premise/--hypothesis; "
                           "an --input file holds its parses in each line")
    if request.output and not request.input:
        raise PredictError("--output goes with --input")
    if request.num_threads is not None and not request.tflite:
        raise PredictError("--num-threads goes with --tflite")
    kind, path = request.model
    check_model(kind, path)
    if request.output:  # never onto the input, a file of the model, or into another kind of folder
        check_output(request.output, "report", "--output", inputs=[request.input])
    for option in ("premise", "hypothesis", "premise_parse", "hypothesis_parse"):
        text = getattr(request, option)
        try:
            (text or "").encode("utf-8")
        except UnicodeEncodeError as error:
            raise PredictError(f"--{option.replace('_', '-')} is not UTF-8 text (character {error.start + 1}): "
                               "give the sentence in UTF-8") from None


def open_model(request):
    """The predictor of `--run-dir`, `--saved-model`, `--tflite` or `--preset` (`zoo.predictors.open_predictor`)."""
    import_tensorflow()  # its notices filtered (zoo.quiet)
    from zoo.predictors import open_predictor  # deferred: imports TensorFlow

    kind, path = request.model
    try:
        predictor = open_predictor(path, kind=kind, num_threads=request.num_threads)
    except (OSError, ValueError) as error:  # FileNotFoundError, and a preset that cannot be fetched
        raise PredictError(str(error)) from None
    note = predictor.run.progress() if kind == "run" else None  # a run still training, or stopped: said
    if note:
        print(f"[predict] {note}", file=sys.stderr, flush=True)
    return predictor


def report_length_notes(predictor, pairs, what):
    """Counts, on stderr, the pairs the model's maximum lengths cut and the empty sentences (both are answered),
    for every kind of model (`Predictor.length_notes`), in one line naming `what` was read; returns the counts
    (None for a predictor that does not know its tokenizer and lengths)."""
    from zoo.runs.datasets import describe_length_notes  # deferred: imports TensorFlow (tf.data)

    notes = predictor.length_notes(pairs)
    line = describe_length_notes(notes) if notes is not None else ""
    if line:
        print(f"[predict] {what}: {line}", file=sys.stderr, flush=True)
    return notes


def format_prediction(prediction):
    """The label and the three probabilities as text lines."""
    lines = [f"label: {prediction['label']}"]
    lines += [f"  {name:<14} {p:.4f}" for name, p in prediction["probabilities"].items()]
    return "\n".join(lines)


def show_attention(explanation, request):
    """Prints the text heatmap(s) and/or saves the PNG of the single pair's `Explanation`."""
    # Deferred: imports TensorFlow, which `main` imports first with its start-up lines filtered.
    from zoo.runs.alignment import alignment_grid, save_attention_png, text_heatmap

    if request.show_attention:
        for name in explanation.maps:
            what = ("rows: premise, columns: hypothesis" if name == "attention_reverse"
                    else "rows: hypothesis, columns: premise")
            print(f"\n{name} ({what}; darker = more weight, over the map's own range)")
            print(text_heatmap(*alignment_grid(explanation, name)))
    if request.attention_png:
        try:
            print(f"[predict] wrote {save_attention_png(explanation, request.attention_png)}")
        except OSError as error:
            raise PredictError(f"cannot write {request.attention_png}: {error}") from None


def write_predictions(predictions, path):
    """Writes one JSON line per prediction to `path` (stdout when None)."""
    rounded = [{**p, "probabilities": {name: round(float(v), 6) for name, v in p["probabilities"].items()}}
               for p in predictions]
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in rounded)
    if path is None:
        sys.stdout.write(text)
        return
    try:
        with atomic_write(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as error:
        raise PredictError(f"cannot write {path}: {error}") from None


def describe_check(predictor):
    """What `--check` found: which manifest the model's files matched (a model written before the zoo kept one
    is said to be checked by loading only)."""
    from zoo.export.tflite_nli import MANIFEST_FILE as TFLITE_MANIFEST
    from zoo.export.version_files import MANIFEST_PATH
    from zoo.runs.manifest import MANIFEST_FILE, recorded

    if predictor.kind == "run":
        kept = recorded(predictor.path, expected=False) is not None
        manifest = MANIFEST_FILE
    elif predictor.kind == "saved_model":
        kept, manifest = bool(predictor.checked_files), MANIFEST_PATH
    elif predictor.kind == "tflite":
        kept, manifest = os.path.exists(os.path.join(predictor.path, TFLITE_MANIFEST)), TFLITE_MANIFEST
    else:
        kept, manifest = True, "metadata.json"
    if not kept:
        return f"{predictor.describe()}: loads; it keeps no manifest (written before the zoo kept one), so its files " \
               "were not checked"
    return f"{predictor.describe()}: its files match the SHA-256 its {manifest} records, and it loads"


def predict(request):
    """Runs the prediction `request` (a `PredictRequest`) asks for."""
    check_request(request)
    if request.check:
        predictor = open_model(request)
        print(f"[predict] {describe_check(predictor)}")
        return []
    pairs = read_pairs(request.input) if request.input else \
        [(request.premise, request.hypothesis, request.premise_parse, request.hypothesis_parse)]
    predictor = open_model(request)
    explanation = None
    if request.explains:  # checked before anything is printed
        explanation = predictor.explain(request.premise, request.hypothesis, request.premise_parse,
                                        request.hypothesis_parse)
        if not explanation.maps:
            raise PredictError("this model has no attention to show (--show-attention, --attention-png)")
    notes = report_length_notes(predictor, pairs, request.input or "the pair")
    from zoo.export.saved_model import without_cut_notes  # deferred: imports TensorFlow, started by now

    try:
        with (without_cut_notes() if request.saved_model and notes is not None else contextlib.nullcontext()):
            predictions = predictor.predict(pairs, batch_size=request.batch_size)
    except ValueError as error:  # a parse whose leaves are not the sentence's tokens, or too deep
        raise PredictError(f"{request.input or 'the pair'}: {error}") from None
    if request.input:
        write_predictions(predictions, request.output)
    else:
        print(format_prediction(predictions[0]))
        if explanation is not None:
            show_attention(explanation, request)
    explain_first_result(predictor, explanation)
    return predictions


def explain_first_result(predictor, explanation):
    """One line on stderr where the model's recorded test accuracy is near chance, one where the attention
    shown is near uniform: what a first model trained on the shipped sample gives, said so."""
    from zoo.runs.alignment import say_if_uniform  # deferred: imports matplotlib's helpers with zoo.plotting

    score = predictor.test_score()
    if score:
        say_if_near_chance({"the model's test": score["accuracy"]})
    if explanation is not None:
        say_if_uniform(explanation)


def main(argv=None, prog="predict.py"):
    """Runs `predict.py`; a user error prints one line `predict.py: error: ...` and exits with status 2. The
    arguments and the files they name are checked before TensorFlow starts (`predict` opens the model last)."""
    request = request_from_args(build_parser(prog).parse_args(argv))
    return guarded(prog, lambda: predict_command(request, prog), hint="write elsewhere with --output",
                   target=request.output)


def predict_command(request, prog):
    """`main` once the command line is parsed."""
    try:
        return predict(request)
    except (UserError, CorruptFileError) as error:  # a damaged run file names itself in one line
        print(f"{prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None

