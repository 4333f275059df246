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
kind of model (`Predictor.length_notes`): every message of this command goes to stderr, stdout is its answer.
The work is the library's, `zoo.inference.predict.predict` (`zoo.predict` from Python), which returns the
`Predictions` printed here.
"""

import dataclasses

from zoo.commands.messages import output
from zoo.commands.parsing import (
    BATCH_SIZE,
    FILE_TO_READ,
    FILE_TO_WRITE,
    FOLDER_TO_READ,
    PATH_TO_READ,
    THREADS,
    CommandParser,
    fail,
    guarded,
)
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.inference.predict import PredictRequest, predict


def request_from_args(args):
    """The `PredictRequest` of the parsed command line."""
    return PredictRequest(**{f.name: getattr(args, f.name) for f in dataclasses.fields(PredictRequest)})


def build_parser(prog="predict.py"):
    """The `predict.py` argument parser."""
    parser = CommandParser(prog=prog, description="Predict SNLI labels of sentence pairs.", messages_on_stderr=True)
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


def main(argv=None, prog="predict.py"):
    """Runs `predict.py`; returns the `zoo.inference.predict.Predictions`. A user error prints one line
    `predict.py: error: ...` and exits with status 2. The arguments and the files they name are checked before
    TensorFlow starts (the library opens the model last)."""
    request = request_from_args(build_parser(prog).parse_args(argv))
    return guarded(prog, lambda: predict_command(request, prog), hint="write elsewhere with --output",
                   target=request.output)


def predict_command(request, prog):
    """`main` once the command line is parsed: predicts, then prints the answer (what `--check` found, the
    predictions' JSON lines where no --output was given, or the one pair with its heatmaps)."""
    try:
        answer = predict(request)
    except (UserError, CorruptFileError) as error:  # a damaged run file names itself in one line
        fail(prog, error)
    if answer.checked is not None:
        output(answer.checked)
    elif request.input:
        if answer.output is None:
            output(answer.json_lines(), end="")
    else:
        output(answer.format_pair())
        if request.show_attention:
            output(answer.format_attention())
    return answer
