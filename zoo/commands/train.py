"""`nli-zoo train` (and `train.py`): the argument parser, turned into the run's one typed configuration
(`run_config`: `zoo.training.config.RunConfig.from_options` of the parsed options) and trained.
"""

import argparse
import dataclasses
import os
import warnings

from zoo.commands.messages import output
from zoo.commands.options import add_corpus_options
from zoo.commands.parsing import (
    BATCH_SIZE,
    COUNT,
    COUNT_OR_ZERO,
    EPOCHS,
    EXAMPLES_SHOWN,
    FOLDER_TO_READ,
    FOLDER_TO_WRITE,
    MESSAGE_OPTIONS,
    PATH_TO_READ,
    SECONDS,
    SEED,
    THREADS,
    CommandParser,
    guarded,
    stop,
)
from zoo.commands.parsing import EMBEDDING_DIM as EMBEDDING_DIM_FLAG
from zoo.constants import EMBEDDING_DIM
from zoo.errors import TrainInterrupted, UserError
from zoo.quiet import import_tensorflow
from zoo.runs.evaluation import format_results, say_if_near_chance
from zoo.runs.targets import check_output
from zoo.training import compile_cache
from zoo.training.config import ATTENTION_SCALES, MIXED_PRECISION, STRATEGIES, RunConfig

# The flags' defaults are `RunConfig`'s (one default per setting).
DEFAULTS = {field.name: field.default for field in dataclasses.fields(RunConfig)}


def build_parser(prog="train.py"):
    """The `train.py` argument parser.

    Returns:
        an `argparse.ArgumentParser`.
    """
    parser = CommandParser(
        prog=prog, fit_verbosity=True,
        description="Train an nli-zoo model on SNLI with its paper preset. Rerun the same command to "
                    "resume an interrupted run.")
    parser.add_argument("--model", required=True, help="registered model name (see zoo.list_models())")
    parser.add_argument("--dataset", default=DEFAULTS["dataset"],
                        help="'snli' or 'multi_nli' (tensorflow-datasets), or 'snli_sample' (shipped rows); "
                             "default snli")
    parser.add_argument("--data-dir", default=None, type=PATH_TO_READ,
                        help="a corpus on disk, replacing --dataset: an snli_1.0 or multinli_1.0 folder or zip, "
                             "SICK.txt (or its folder), a folder of train/dev/test NLI files, or one NLI file "
                             "(.jsonl, .tsv, .csv)")
    add_corpus_options(parser)
    parser.add_argument("--roles", default=None, metavar="ROLE=SPLIT,...",
                        help="which of the corpus' splits is train, validation (dev) and test, e.g. "
                             "test=dev_matched (defaults per corpus are printed; see docs/data.md)")
    parser.add_argument("--embeddings", default=None,
                        help="word vectors; default: the paper's (the preset's `embeddings`, e.g. "
                             "word2vec-google-news-300 for Rocktäschel et al.). 'glove-6b-50d' (installed from "
                             "PyPI, offline); a name downloaded once into the cache ($NLI_ZOO_CACHE, default "
                             "~/.cache/nli-zoo): glove-840b-300d, glove-6b-300d, word2vec-google-news-300, "
                             "fasttext-crawl-300d-2m; a vector file (.txt/.vec/.gz/.zip, word2vec .bin/.bin.gz); "
                             "or 'none' (random vectors, all trainable)")
    parser.add_argument("--embedding-dim", type=EMBEDDING_DIM_FLAG, default=None,
                        help=f"word vector size with --embeddings none (default {EMBEDDING_DIM}, as in the papers)")
    parser.add_argument("--epochs", type=EPOCHS, default=None, help="shortcut for --set epochs=N")
    parser.add_argument("--batch-size", type=BATCH_SIZE, default=None, help="shortcut for --set batch_size=B")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a preset setting (model, train or data section); repeatable; "
                             "VALUE is parsed as JSON when possible (1e-3, true, null, {\"a\": 1}), "
                             "else taken as a string")
    parser.add_argument("--members", nargs=2, default=None, type=FOLDER_TO_READ, metavar=("ESIM_RUN", "TREE_RUN"),
                        help="with --model him: combine two finished runs (an esim run and a "
                             "syntactic_tree_lstm or esim_tree run, same data and vocabulary) into the HIM "
                             "ensemble without training, and evaluate each member and the ensemble")
    parser.add_argument("--init-from", default=None, type=FOLDER_TO_READ, metavar="RUN",
                        help="start from a trained run of the same model and sizes (fine-tuning, e.g. SNLI to "
                             "SICK): its vocabulary is kept and extended with the new data's words, its weights "
                             "loaded; the new run records where it started")
    parser.add_argument("--run-dir", default=None, type=FOLDER_TO_WRITE, help="run directory; default runs/MODEL")
    parser.add_argument("--logdir", default=None, type=FOLDER_TO_WRITE, help="TensorBoard directory; default RUN/logs")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete an existing run directory whose settings differ (or that finished) "
                             "and train from scratch")
    parser.add_argument("--strategy", choices=STRATEGIES, default=DEFAULTS["strategy"],
                        help="distribution strategy; auto = mirrored over all GPUs when more than one "
                             "is visible, else the default strategy")
    parser.add_argument("--cluster-timeout", type=SECONDS, default=None, metavar="SECONDS",
                        help="--strategy multi_worker: stop with an error when the workers of TF_CONFIG are not "
                             "all up within SECONDS (default 300; 0 waits forever)")
    parser.add_argument("--mixed-precision", choices=sorted(MIXED_PRECISION), default=None,
                        help="mixed precision policy: bf16 (mixed_bfloat16) or fp16 (mixed_float16)")
    parser.add_argument("--jit-compile", choices=("auto", "true", "false"), default=DEFAULTS["jit_compile"],
                        type=str.lower, help="XLA compilation of the training step: auto (Keras decides: XLA on "
                        "GPU/TPU unless an LSTM runs on cuDNN or a distribution strategy is used; see "
                        "docs/hardware.md), true (LSTMs switch from cuDNN to XLA loops) or false")
    parser.add_argument("--compile-cache", default=None, metavar="DIR",
                        help="persistent XLA compilation cache, so that a rerun pays no compilation "
                             "(default $NLI_ZOO_CACHE/xla, i.e. ~/.cache/nli-zoo/xla; 'none': off)")
    parser.add_argument("--seed", type=SEED, default=DEFAULTS["seed"], help=f"random seed (default {DEFAULTS['seed']})")
    parser.add_argument("--log-every", type=COUNT_OR_ZERO, default=None,
                        help="write batch-level TensorBoard scalars every N steps (0 = per epoch only; default: "
                             "about 20 points per epoch)")
    parser.add_argument("--attention-examples", type=EXAMPLES_SHOWN, default=DEFAULTS["attention_examples"],
                        help="number of fixed dev pairs whose attention is drawn (0 = none)")
    parser.add_argument("--images-every", type=COUNT_OR_ZERO, default=argparse.SUPPRESS, metavar="N",
                        help="draw the attention and confusion images after every Nth epoch and after the last "
                             f"(0: never; default {DEFAULTS['images_every']})")
    parser.add_argument("--attention-scale", choices=ATTENTION_SCALES, default=DEFAULTS["attention_scale"],
                        help="colours of the attention images: relative (default: each map over its own range, "
                             "with a colour bar) or absolute (the papers' grey scale, white 0 to black 1)")
    parser.add_argument("--max-train-examples", type=COUNT, default=None,
                        help="use only the first N training examples (quick experiments)")
    parser.add_argument("--max-eval-examples", type=COUNT, default=None,
                        help="use only the first N dev and test examples (quick experiments)")
    parser.add_argument("--no-bucket", action="store_true",
                        help="batch pairs in data order instead of bucketing them by length")
    parser.add_argument("--no-shuffle", action="store_true", help="do not shuffle the training set")
    # Development and test hooks, hidden from --help.
    parser.add_argument("--cpu-devices", type=THREADS, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pause-after-epoch", type=SECONDS, default=DEFAULTS["pause_after_epoch"],
                        help=argparse.SUPPRESS)
    return parser


def run_config(args):
    """The run's `RunConfig` from the parsed command line (validated: a `ConfigError` names the option)."""
    return RunConfig.from_options(**{k: v for k, v in vars(args).items() if k not in MESSAGE_OPTIONS})


def main(argv=None, prog="train.py"):
    """Runs `train.py` with `argv` (default `sys.argv[1:]`).

    Returns:
        the `TrainOutcome` of `zoo.training.trainer.train(config)`; on a user error, or a fault of the machine (a
        full or read-only disk), prints one line to stderr and exits with status 2; Ctrl-C anywhere prints one line
        saying how to resume and exits with status 130.
    """
    args = build_parser(prog).parse_args(argv)
    run_dir = args.run_dir or os.path.join("runs", args.model)
    interrupted = (f"interrupted: {run_dir} keeps every finished epoch; "
                   "rerun the same command to resume after the last one")
    return guarded(prog, lambda: train_command(args, prog), interrupted, hint="train in another --run-dir",
                   target=run_dir)


def train_command(args, prog):
    """`main` once the command line is parsed."""
    try:
        config = run_config(args)  # validated once, before TensorFlow and before the run directory is touched
        # a run replaces only a run, never a sweep, an export, its data or the run it starts from
        check_output(config.run_dir, "run", "--run-dir", overwrite=args.overwrite,
                     inputs=[args.data_dir, args.init_from, *(args.members or ()), args.embeddings])
        compile_cache.enable(config.compile_cache, backend="tensorflow")  # read when TensorFlow starts
        import_tensorflow()  # its notices filtered (zoo.quiet)
        # Deferred: the training loop imports TensorFlow and Keras.
        from zoo.training.trainer import train

        # tf.data datasets of unknown length end each epoch this way; Keras warns every epoch.
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        trained = train(config)
    except UserError as error:  # TrainError, and a --run-dir it must not write (OutputError); Ctrl-C: 130
        stop(prog, error, 130 if isinstance(error, TrainInterrupted) else 2)
    output(format_results(trained.results))  # the run's scores: what the command exists to print
    # a first run on the shipped sample: say why the accuracy is what it is
    say_if_near_chance({"test": trained.results.test_accuracy, "dev": trained.results.dev_accuracy})
    return trained
