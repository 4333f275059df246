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
genres) and writes them as JSON to RUN/evaluations/NAME.json (or `--output`). The work is the library's,
`zoo.inference.evaluate.evaluate` (`zoo.evaluate` from Python), which returns the `Evaluation` printed here;
`--quiet` prints the scores (and warnings) only.
"""

import logging

from zoo.commands.messages import output
from zoo.commands.options import add_corpus_options, add_diagnostics_options, diagnostics_request
from zoo.commands.parsing import BATCH_SIZE, COUNT, FOLDER_TO_READ, PATH_TO_READ, REPORT, CommandParser, fail, guarded
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.inference.evaluate import EvaluateRequest, evaluate

logger = logging.getLogger(__name__)


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
    """Runs `evaluate.py` with `argv`; returns the `zoo.inference.evaluate.Evaluation` (also written as JSON). User
    errors exit with status 2."""
    request = request_from_args(build_parser(prog).parse_args(argv))
    return guarded(prog, lambda: evaluate_command(request, prog), hint="write the report elsewhere with --output",
                   target=request.output or request.run_dir or request.saved_model or request.tflite)


def evaluate_command(request, prog):
    """`main` once the command line is parsed: evaluates, then prints the scores and the diagnostics' tables."""
    try:
        evaluation = evaluate(request)
    except (UserError, CorruptFileError) as error:  # a damaged run file names itself in one line
        fail(prog, error)
    if evaluation.results:
        output(evaluation.format_scores())
    if evaluation.diagnostics is not None:
        output(evaluation.format_diagnostics())
    if evaluation.output:
        logger.info(f"written to {evaluation.output}")
    return evaluation
