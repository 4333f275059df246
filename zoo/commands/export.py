"""Exports a trained run for serving: a SavedModel for TF Serving, or a TFLite model.

Example:
```
python export.py --run-dir runs/rocktaschel_wbw                       # models/rocktaschel_wbw/1/
python export.py --run-dir runs/rocktaschel_wbw --out models/wbw --version 3
python export.py --run-dir runs/esim --loop kernel                    # the bi-LSTMs on TensorFlow's LSTM kernel
python export.py --run-dir runs/bowman_lstm --format tflite           # models/bowman_lstm_tflite/model.tflite
python export.py --run-dir runs/rocktaschel_wbw --format tflite --max-vocabulary 20000 --quantize dynamic-range
```
A SavedModel comes with TF Serving's files: warm-up requests in the version folder,
`batching_parameters.txt` and `models.config` (version labels stable / canary) in the model folder. A
TFLite export is checked on the run's test split against the float model (`metadata.json`).
See docs/serving.md for the signatures, the TF Serving commands and the request formats.
"""

import logging
import os

from zoo.commands.parsing import (
    BATCH_SIZE,
    BATCH_SIZE_OR_ZERO,
    COUNT,
    COUNT_OR_ZERO,
    FOLDER_TO_READ,
    FOLDER_TO_WRITE,
    CommandParser,
    fail,
    guarded,
)
from zoo.data.corpora import check_source
from zoo.data.errors import DataUnavailableError
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.layers.loop_choice import DEFAULT_DESIGN_REQUEST, DESIGN_REQUESTS
from zoo.quiet import import_tensorflow
from zoo.runs.kinds import check_model
from zoo.runs.record import load_record
from zoo.runs.targets import check_output
from zoo.settings.values import MAX_BATCH_SIZE

logger = logging.getLogger(__name__)

FORMATS = ("saved_model", "tflite", "preset")


def build_parser(prog="export.py"):
    """The `export.py` argument parser."""
    parser = CommandParser(prog=prog, description="Export a trained run for serving, or as a preset.")
    parser.add_argument("--run-dir", required=True, type=FOLDER_TO_READ, help="the run directory written by train.py")
    parser.add_argument("--format", choices=FORMATS, default="saved_model",
                        help="saved_model (TF Serving, default), tflite (LiteRT, token ids in) or preset (a folder "
                             "in KerasHub's layout that zoo.from_preset loads: docs/presets.md)")
    parser.add_argument("--out", default=None, type=FOLDER_TO_WRITE,
                        help="saved_model: the model folder MODELS/NAME holding numbered versions "
                             "(default models/<model name>); tflite: the output folder "
                             "(default models/<model name>_tflite)")
    parser.add_argument("--version", type=COUNT, default=None,
                        help="saved_model: the version number (default: the next free one)")
    parser.add_argument("--tflite-batch-size", type=BATCH_SIZE, default=1,
                        help="tflite: the fixed number of pairs per invocation (default 1)")
    parser.add_argument("--overwrite", action="store_true",
                        help="tflite: replace an existing export (the new one is built beside it and swapped in "
                             "whole); preset: replace an existing preset folder")
    serving = parser.add_argument_group("saved_model: TF Serving files")
    serving.add_argument("--allowed-batch-sizes", default=None, metavar="B1,B2,...",
                         help="the batch sizes TF Serving's batching pads to, which the warm-up requests cover "
                              "(default 1,2,4,8,16,32,64,128,256)")
    serving.add_argument("--base-path", default=None,
                         help="the model folder as TF Serving sees it, in models.config "
                              "(default /models/<folder name>)")
    serving.add_argument("--stable-version", type=COUNT, default=None,
                         help="the version labelled stable in models.config (default: the previous highest; the "
                              "new version is the canary)")
    serving.add_argument("--chunk-size", type=COUNT_OR_ZERO, default=None, metavar="N",
                         help="serving_default runs larger batches sorted by sentence length in chunks of N pairs, "
                              "each padded to its own longest sentences (default 32; 0: whole batches)")
    serving.add_argument("--loop", choices=DESIGN_REQUESTS, default=None,
                         help="the bi-LSTMs' loop at one pair on a CPU, traced into the graph and recorded in its "
                              "zoo.json: auto (default) this machine's `nli-zoo tune` choice, else steps; or steps / "
                              "kernel as asked")
    serving.add_argument("--xla-max-batch", type=BATCH_SIZE_OR_ZERO, default=0, metavar="N",
                         help="run serving_default batches of up to N pairs through an XLA-compiled model "
                              "(faster small batches on a CPU; TF Serving needs --xla_cpu_compilation_enabled); "
                              "default 0: never")
    device = parser.add_argument_group("tflite: fitting a device")
    device.add_argument("--max-vocabulary", type=COUNT, default=None, metavar="N",
                        help="keep the run's first N ids (training words first); the others read as [UNK]")
    device.add_argument("--quantize", choices=("none", "dynamic-range", "float16"), default="none",
                        help="post-training quantization: int8 weights (dynamic-range) or float16 weights")
    device.add_argument("--test-data", default=None,
                        help="the corpus whose test split checks the accuracy (default: the run's data)")
    device.add_argument("--no-accuracy-check", action="store_true",
                        help="skip scoring the export on the test split against the float model")
    return parser


MAX_ALLOWED_BATCH_SIZES = 64  # TF Serving pads each batch to the next allowed size; a few are the use


def parse_batch_sizes(text):
    """`"1,2,4"` -> `(1, 2, 4)`.

    Raises:
        ValueError: not a comma-separated list of positive integers.
    """
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1 or max(sizes) > MAX_BATCH_SIZE or len(sizes) > MAX_ALLOWED_BATCH_SIZES:
        raise ValueError(f"--allowed-batch-sizes wants up to {MAX_ALLOWED_BATCH_SIZES} whole numbers from 1 to "
                         f"{MAX_BATCH_SIZE:,} separated by commas, got {text[:80]!r}")
    return sizes


def export(args):
    """Loads the run and writes the export `args` asks for.

    Returns:
        the path written (version directory, model.tflite or the preset folder).

    Raises:
        ValueError, FileNotFoundError: user errors (printed as one line by `main`).
    """
    check_model("run", args.run_dir)  # reads its config.json: a damaged one is one line
    model_name = load_record(args.run_dir).model
    tflite_only = {"--max-vocabulary": args.max_vocabulary is not None, "--quantize": args.quantize != "none",
                   "--test-data": args.test_data is not None, "--no-accuracy-check": args.no_accuracy_check}
    serving_only = {"--version": args.version is not None,
                    "--allowed-batch-sizes": args.allowed_batch_sizes is not None,
                    "--base-path": args.base_path is not None, "--stable-version": args.stable_version is not None,
                    "--xla-max-batch": bool(args.xla_max_batch), "--chunk-size": args.chunk_size is not None,
                    "--loop": args.loop is not None}
    given = {"saved_model": tflite_only, "tflite": serving_only, "preset": {**tflite_only, **serving_only}}
    wrong = [name for name, on in given[args.format].items() if on]
    if wrong:
        other = "tflite" if wrong[0] in tflite_only else "saved_model"
        raise ValueError(f"{wrong[0]} applies to --format {other} only")
    if args.xla_max_batch < 0 or (args.chunk_size or 0) < 0:
        raise ValueError("--xla-max-batch and --chunk-size must be 0 (off) or positive")
    batch_sizes = parse_batch_sizes(args.allowed_batch_sizes) if args.allowed_batch_sizes else None
    if args.test_data is not None:
        check_source(args.test_data)
    out = args.out or os.path.join({"saved_model": "models", "tflite": "models", "preset": "presets"}[args.format],
                                   model_name + ("_tflite" if args.format == "tflite" else ""))
    # an export replaces only an export of its own format, never the run, its data or another kind of folder
    check_output(out, args.format, "--out", inputs=[args.run_dir, args.test_data], overwrite=args.overwrite)
    import_tensorflow()  # the arguments checked: TensorFlow now, its notices filtered (zoo.quiet)
    from zoo.export import serving_files
    from zoo.export.saved_model import DEFAULT_CHUNK_SIZE, export_saved_model
    from zoo.export.tflite import export_tflite, test_examples_of
    from zoo.presets import export_preset
    from zoo.runs import load_run

    if args.format == "preset":  # given the folder, it reads the run under the run's lock
        return export_preset(args.run_dir, out, overwrite=args.overwrite)
    run = load_run(args.run_dir)
    if args.format == "tflite":
        examples = None if args.no_accuracy_check else test_examples_of(run, args.test_data)
        return export_tflite(run, out, batch_size=args.tflite_batch_size, overwrite=args.overwrite,
                             max_vocabulary=args.max_vocabulary, quantize=args.quantize, test_examples=examples)
    model_dir = out
    # under the run's lock and the model folder's (one export at a time: versions and models.config are read,
    # then written), built beside its version folder and renamed into place whole
    path = export_saved_model(run, model_dir, args.version, batch_sizes=batch_sizes, base_path=args.base_path,
                              stable_version=args.stable_version, xla_max_batch=args.xla_max_batch,
                              chunk_size=DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size,
                              loop=args.loop or DEFAULT_DESIGN_REQUEST)
    from zoo.export.loop_tuning import LoopChoice
    from zoo.export.version_files import read_metadata

    logger.info(f"few-rows loop: {LoopChoice.from_json(read_metadata(path)['loop']).describe()}")
    labels = serving_files.version_labels(model_dir, int(os.path.basename(path)), args.stable_version)
    logger.info(f"TF Serving: {os.path.join(path, serving_files.WARMUP_FILE)}, "
                f"{os.path.join(model_dir, serving_files.BATCHING_FILE)}, "
                f"{os.path.join(model_dir, serving_files.MODELS_CONFIG_FILE)} "
                f"(stable: version {labels['stable']}, canary: version {labels['canary']})")
    return path


def main(argv=None, prog="export.py"):
    """Runs `export.py`; a user error prints one line `export.py: error: ...` and exits with status 2."""
    args = build_parser(prog).parse_args(argv)
    interrupted = ("interrupted: the export was being built beside its target, which is untouched; "
                   "rerun the same command")
    return guarded(prog, lambda: export_command(args, prog), interrupted, hint="export elsewhere with --out",
                   target=args.out or ("presets" if args.format == "preset" else "models"))


def export_command(args, prog):
    """`main` once the command line is parsed."""
    try:
        path = export(args)
    except (ValueError, FileNotFoundError, UserError, CorruptFileError, DataUnavailableError) as error:
        fail(prog, error)
    logger.info(f"wrote {path}")
    return path

