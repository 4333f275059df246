"""Labelling sentence pairs with a trained run, an exported SavedModel, a TFLite export or a preset:
`predict(PredictRequest(...))` returns `Predictions`, a typed record (the labels and probabilities, the one
pair's attention, the counts of cut pairs, what `check` found). `nli-zoo predict` (and `predict.py`) build
the request from their flags, call this and print the record.

```python
import zoo

answer = zoo.predict(zoo.PredictRequest(run_dir="runs/esim", premise="A man plays.", hypothesis="A man sleeps.",
                                        show_attention=True))
answer.predictions[0]["label"], answer.format_pair(), answer.format_attention()
zoo.predict(zoo.PredictRequest(saved_model="models/esim", input="pairs.jsonl", output="predictions.jsonl"))
```
`input` reads JSON lines with string fields `premise` and `hypothesis` (and, optionally,
`premise_binary_parse` and `hypothesis_binary_parse`); `output` gets one line
`{"label": ..., "probabilities": {...}}` per input line. What it does is said through this module's logger
(`[predict]`): an unfinished run, the pairs cut at the model's maximum lengths (WARNING).
"""

import contextlib
import dataclasses
import json
import logging
import os
from typing import Optional

from zoo.data.trees import TreeFormatError, parse_binary_parse
from zoo.errors import UserError
from zoo.fileio import atomic_write
from zoo.quiet import import_tensorflow
from zoo.runs.evaluation import say_if_near_chance
from zoo.runs.kinds import MODEL_FLAGS, check_model
from zoo.runs.targets import check_output

logger = logging.getLogger(__name__)


class PredictError(UserError):
    """A user-facing error: printed as one line, exit status 2."""


@dataclasses.dataclass(frozen=True)
class PredictRequest:
    """What a prediction is asked to do (`nli-zoo predict` builds it from its flags).

    Attributes:
        run_dir, saved_model, tflite, preset: the model (exactly one).
        premise, hypothesis, premise_parse, hypothesis_parse: one pair (and its binary parses).
        input, output: a JSON-lines file of pairs, and where its predictions go (None: not written; the
            command prints them).
        batch_size: pairs per model call; num_threads: the TFLite interpreter's threads.
        show_attention, attention_png: explain the one pair (its maps in `Predictions.explanation`) / save
            its alignment as a PNG.
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
        given = [(k, p) for k, p in (("run", self.run_dir), ("saved_model", self.saved_model),
                                     ("tflite", self.tflite), ("preset", self.preset)) if p]
        if len(given) != 1:
            raise PredictError(f"give exactly one model ({', '.join(MODEL_FLAGS.values())}), not {len(given)}")
        return given[0]

    @property
    def explains(self):
        """Whether the pair's attention is shown or saved."""
        return bool(self.show_attention or self.attention_png)


@dataclasses.dataclass(frozen=True)
class Predictions:
    """What a prediction answered, typed.

    Attributes:
        predictions: one `{"label", "probabilities": {label: p}}` per pair, in the input's order (the one pair
            alone; none with `check`).
        explanation: the one pair's `zoo.runs.predictor.Explanation` where it was asked to be explained.
        length_notes: the counts of the pairs cut at the model's maximum lengths and of the empty sentences
            (None for a predictor that does not know its tokenizer and lengths).
        checked: with `check`, what the check found (one line).
        output: the predictions' file written; attention_png: the alignment's PNG written.
    """

    predictions: list = dataclasses.field(default_factory=list)
    explanation: Optional[object] = None
    length_notes: Optional[dict] = None
    checked: Optional[str] = None
    output: Optional[str] = None
    attention_png: Optional[str] = None

    def json_lines(self):
        """The predictions as JSON lines (probabilities rounded to 6 places), as `output` gets them."""
        rounded = [{**p, "probabilities": {name: round(float(v), 6) for name, v in p["probabilities"].items()}}
                   for p in self.predictions]
        return "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in rounded)

    def format_pair(self):
        """The first pair's label and its three probabilities as text lines."""
        return format_prediction(self.predictions[0])

    def format_attention(self):
        """The pair's maps as text heatmaps, each under a line naming its rows and columns ("" when the pair
        was not explained)."""
        from zoo.runs.alignment import alignment_grid, text_heatmap  # matplotlib's helpers, with zoo.plotting

        if self.explanation is None:
            return ""
        shown = []
        for name in self.explanation.maps:
            what = ("rows: premise, columns: hypothesis" if name == "attention_reverse"
                    else "rows: hypothesis, columns: premise")
            shown += [f"\n{name} ({what}; darker = more weight, over the map's own range)",
                      text_heatmap(*alignment_grid(self.explanation, name))]
        return "\n".join(shown)


def format_prediction(prediction):
    """The label and the three probabilities as text lines."""
    lines = [f"label: {prediction['label']}"]
    lines += [f"  {name:<14} {p:.4f}" for name, p in prediction["probabilities"].items()]
    return "\n".join(lines)


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
    check_model(*request.model)
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
    """The predictor of `run_dir`, `saved_model`, `tflite` or `preset` (`zoo.predictors.open_predictor`)."""
    import_tensorflow()  # its notices filtered (zoo.quiet)
    from zoo.predictors import open_predictor  # deferred: imports TensorFlow

    kind, path = request.model
    try:
        predictor = open_predictor(path, kind=kind, num_threads=request.num_threads)
    except (OSError, ValueError) as error:  # FileNotFoundError, and a preset that cannot be fetched
        raise PredictError(str(error)) from None
    note = predictor.run.progress() if kind == "run" else None  # a run still training, or stopped: said
    if note:
        logger.warning(note)
    return predictor


def count_length_notes(predictor, pairs, what):
    """Counts the pairs the model's maximum lengths cut and the empty sentences (both are answered), for every
    kind of model (`Predictor.length_notes`), said in one line naming `what` was read (WARNING); returns the
    counts (None for a predictor that does not know its tokenizer and lengths)."""
    from zoo.runs.datasets import describe_length_notes  # deferred: imports TensorFlow (tf.data)

    notes = predictor.length_notes(pairs)
    line = describe_length_notes(notes) if notes is not None else ""
    if line:
        logger.warning(f"{what}: {line}")
    return notes


def describe_check(predictor):
    """What `check` found: which manifest the model's files matched (a model written before the zoo kept one
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
    """Runs the prediction `request` (a `PredictRequest`) asks for.

    Returns:
        the `Predictions`.

    Raises:
        PredictError: a request that cannot be done, in one line naming the option or `FILE:LINE`
            (`zoo.fileio.CorruptFileError` for a damaged file of a run).
    """
    check_request(request)
    if request.check:
        return Predictions(checked=describe_check(open_model(request)))
    pairs = read_pairs(request.input) if request.input else \
        [(request.premise, request.hypothesis, request.premise_parse, request.hypothesis_parse)]
    predictor = open_model(request)
    explanation = None
    if request.explains:  # checked before anything is said
        explanation = predictor.explain(request.premise, request.hypothesis, request.premise_parse,
                                        request.hypothesis_parse)
        if not explanation.maps:
            raise PredictError("this model has no attention to show (--show-attention, --attention-png)")
    notes = count_length_notes(predictor, pairs, request.input or "the pair")
    from zoo.export.saved_model import without_cut_notes  # deferred: imports TensorFlow, started by now

    try:
        with (without_cut_notes() if request.saved_model and notes is not None else contextlib.nullcontext()):
            predictions = predictor.predict(pairs, batch_size=request.batch_size)
    except ValueError as error:  # a parse whose leaves are not the sentence's tokens, or too deep
        raise PredictError(f"{request.input or 'the pair'}: {error}") from None
    answer = Predictions(predictions=predictions, explanation=explanation, length_notes=notes)
    if request.output:
        write_predictions(answer, request.output)
        answer = dataclasses.replace(answer, output=request.output)
    if request.attention_png:
        answer = dataclasses.replace(answer, attention_png=save_png(explanation, request.attention_png))
    explain_first_result(predictor, explanation)
    return answer


def write_predictions(answer, path):
    """Writes the predictions' JSON lines to `path` (atomically)."""
    try:
        with atomic_write(path, "w", encoding="utf-8") as f:
            f.write(answer.json_lines())
    except OSError as error:
        raise PredictError(f"cannot write {path}: {error}") from None


def save_png(explanation, path):
    """Saves the pair's alignment as a PNG; returns the path written."""
    from zoo.runs.alignment import save_attention_png  # deferred: matplotlib

    try:
        written = save_attention_png(explanation, path)
    except OSError as error:
        raise PredictError(f"cannot write {path}: {error}") from None
    logger.info(f"wrote {written}")
    return written


def explain_first_result(predictor, explanation):
    """A `[note]` where the model's recorded test accuracy is near chance, one where the attention shown is
    near uniform: what a first model trained on the shipped sample gives, said so."""
    from zoo.runs.alignment import say_if_uniform  # deferred: imports matplotlib's helpers with zoo.plotting

    score = predictor.test_score()
    if score:
        say_if_near_chance({"the model's test": score["accuracy"]})
    if explanation is not None:
        say_if_uniform(explanation)
