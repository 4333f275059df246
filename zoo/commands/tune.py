"""`nli-zoo tune`: times the bi-LSTM's few-rows loops on this machine once, and records the faster for it.

Example:
```
nli-zoo tune                          # ESIM at its preset size, 5 rounds, TensorFlow's threads
nli-zoo tune --rounds 9 --threads 1   # more rounds, one intra-op thread (as a one-thread server)
```
It times each design of `zoo.layers.tensorflow_lstm` at one pair, and the few-rows loop against the packed
loop at two pairs (`zoo.export.loop_timing`), on the model's inference as the serving graph traces it, random
weights; prints a table and writes this machine's record, `CACHE/tuning/<machine id>.json` (`$NLI_ZOO_CACHE`,
else `~/.cache/nli-zoo`). `export.py --loop auto` (the default), `predict` and the demo on a run read it
(`zoo.export.loop_tuning`); without it they run the default, steps. See docs/speed.md.
"""

import logging
import os

from zoo.commands.messages import output
from zoo.commands.parsing import EMBEDDING_DIM, THREADS, CommandParser, bounded, fail, guarded
from zoo.errors import UserError
from zoo.layers.loop_choice import TUNE_CALLS, TUNE_MODEL, TUNE_ROUNDS
from zoo.quiet import import_tensorflow

logger = logging.getLogger(__name__)

MAX_ROUNDS, MAX_CALLS = 1_000, 10_000
DEFAULTS = {"model": TUNE_MODEL, "rounds": TUNE_ROUNDS, "calls": TUNE_CALLS}


def build_parser(prog="nli-zoo tune"):
    """The `nli-zoo tune` argument parser."""
    parser = CommandParser(prog=prog, description="Time the bi-LSTM's few-rows loops on this machine and record "
                                                  "the faster (read by export --loop auto, predict and the demo).")
    parser.add_argument("--model", default=DEFAULTS["model"],
                        help=f"a registered model with bi-LSTMs, at its preset size (default {DEFAULTS['model']})")
    parser.add_argument("--rounds", type=bounded(MAX_ROUNDS), default=DEFAULTS["rounds"],
                        help=f"rounds, the candidates alternating; each one's median is kept (default "
                             f"{DEFAULTS['rounds']})")
    parser.add_argument("--calls", type=bounded(MAX_CALLS), default=DEFAULTS["calls"],
                        help=f"calls of each candidate per round, each on its own random pairs (default "
                             f"{DEFAULTS['calls']})")
    parser.add_argument("--threads", type=THREADS, default=None,
                        help="TensorFlow's intra-op threads while timing (default: what TensorFlow uses in the "
                             "zoo's commands, $TF_NUM_INTRAOP_THREADS else half the cores)")
    parser.add_argument("--designs-only", action="store_true",
                        help="time only the two designs at one pair (not the two-pair kernel rows)")
    parser.add_argument("--embedding-dim", type=EMBEDDING_DIM, default=None,
                        help="word vector size (default the papers' 300)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a model setting other than the preset's (e.g. hidden_size=8); repeatable")
    return parser


def model_overrides(args):
    """The `--set` model settings (and `--embedding-dim`), checked against the model's preset before TensorFlow."""
    from zoo.registry import get_preset, list_models
    from zoo.training.config import parse_overrides

    if args.model not in list_models():
        raise ValueError(f"--model: no registered model {args.model!r}; `nli-zoo models` lists them")
    overrides = parse_overrides(args.overrides)
    preset = get_preset(args.model)
    unknown = sorted(set(overrides) - set(preset.model))
    if unknown:
        raise ValueError(f"--set {unknown[0]}: not a model setting of {args.model} (its model settings: "
                         f"{', '.join(sorted(preset.model))})")
    preset.with_overrides(overrides)  # each value checked as training checks it (one line naming the setting)
    if args.embedding_dim is not None:
        overrides["embedding_dim"] = args.embedding_dim
    return overrides


def tune(args, prog):
    """Times, writes and prints; returns the path of the record written."""
    overrides = model_overrides(args)
    if args.threads is not None:  # read when TensorFlow starts its pools
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.threads)
    import_tensorflow()
    import keras

    from zoo.export.loop_timing import table, tune_record
    from zoo.export.loop_tuning import this_machine, write_record
    from zoo.layers.loop_choice import device_kind

    if keras.backend.backend() != "tensorflow":
        raise ValueError("the few-rows loops are TensorFlow's: run with KERAS_BACKEND=tensorflow")
    if device_kind() != "cpu":
        raise ValueError(f"the few-rows loops run on a CPU, and this process sees a {device_kind()}: hide it "
                         "(CUDA_VISIBLE_DEVICES=) to tune the CPU")
    logger.info(f"machine {this_machine()}: timing {args.model}, {args.rounds} round(s) of {args.calls} call(s)")
    record = tune_record(args.model, rounds=args.rounds, calls=args.calls, kernel_rows=not args.designs_only,
                         **overrides)
    path = write_record(record)
    output("\n".join(table(record)))
    logger.info(f"threads: {record['machine']['threads']['layout']}; wrote {path}")
    return path


def main(argv=None, prog="nli-zoo tune"):
    """Runs `nli-zoo tune`; a user error prints one line `PROG: error: ...` and exits with status 2."""
    args = build_parser(prog).parse_args(argv)

    def body():
        try:
            return tune(args, prog)
        except (ValueError, UserError) as error:
            fail(prog, error)

    return guarded(prog, body, "interrupted: no tuning record was written; rerun the same command",
                   hint="set NLI_ZOO_CACHE to a folder this user can write")
