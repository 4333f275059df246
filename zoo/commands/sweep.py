"""`nli-zoo sweep`: train a grid of models x seeds x settings, or a random or Bayesian search, on KerasTuner.

Examples:
```
nli-zoo sweep --models bowman_lstm hypothesis_only --seeds 3 --dataset snli_sample \\
    --embeddings glove-6b-50d --epochs 2 --set hidden_size=16 --dir sweeps/small     # 6 trials
nli-zoo sweep --models esim --seeds 2 --search bayesian --max-trials 12 --dir sweeps/esim \\
    --tune learning_rate=1e-4:1e-2:log --tune dropout=0:0.5 --tune hidden_size=100,200,300 --tune lr_decay.wait=1:3
nli-zoo sweep sweep.yaml --dir sweeps/from-file                                    # the same from a spec file
```
Each trial is an ordinary run directory (SWEEP/runs/NAME) trained by `zoo.training.train`, the code
`nli-zoo train` runs. Rerun the same command to resume: finished trials are skipped, a killed one resumes
after its last finished epoch. Several processes share one sweep through KerasTuner's distributed mode
(environment variables, see docs/comparisons.md). Compare the runs with `nli-zoo compare SWEEP`.
"""

import logging
import warnings

from zoo.commands.messages import output
from zoo.commands.options import add_train_options
from zoo.commands.parsing import FOLDER_TO_WRITE, TRIALS, CommandParser, fail, guarded, stop
from zoo.comparison.spec import SEARCHES, TRAIN_OPTIONS, SpecError, SweepSpec, entries_from_flags
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.quiet import import_tensorflow
from zoo.runs.targets import check_output

logger = logging.getLogger(__name__)


def build_parser(prog="nli-zoo sweep"):
    """The `nli-zoo sweep` argument parser."""
    parser = CommandParser(
        prog=prog, fit_verbosity=True,
        description="Train models x seeds x settings (a grid), or a random or Bayesian search, each "
                    "trial an ordinary run directory; rerun the same command to resume.")
    parser.add_argument("spec", nargs="?", default=None,
                        help="a sweep spec file (.json, or .yaml/.yml) with the entries below (models, seeds, set, "
                             "tune, search, max_trials, dataset, ...); flags given as well replace its entries")
    parser.add_argument("--dir", required=True, type=FOLDER_TO_WRITE,
                        help="the sweep directory (runs in DIR/runs/NAME); rerun to resume")
    parser.add_argument("--models", nargs="+", default=None, metavar="MODEL", help="registered model names")
    parser.add_argument("--seeds", default=None,
                        help="N: seeds 0..N-1 (default 1), or a comma list A,B,...; every setting is trained with each")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a preset setting for every run (VALUE parsed as JSON when possible, as in nli-zoo "
                             "train); the same KEY given several times is a grid axis (--set hidden_size=16 "
                             "--set hidden_size=32); KEY.ENTRY changes one entry of a mapping (lr_decay.wait=2)")
    parser.add_argument("--search", choices=SEARCHES, default=None,
                        help="grid (default: every combination), or random or bayesian over the --tune space")
    parser.add_argument("--tune", action="append", default=[], metavar="KEY=MIN:MAX[:log] | KEY=V1,V2,...",
                        help="a search dimension: a range (ints: whole numbers; :log samples its logarithm) or "
                             "values, e.g. learning_rate=1e-4:1e-2:log, dropout=0:0.5, hidden_size=100,200, "
                             "lr_decay.wait=1:3")
    parser.add_argument("--max-trials", type=TRIALS, default=None, help="samples of a search (default 10)")
    add_train_options(parser, vectors="each model's paper vectors")
    return parser


def spec_from_args(args):
    """The `SweepSpec` of a parsed command line: the spec file's entries, replaced by the flags given.

    Raises:
        SpecError: a bad spec (the file and line, or the flag, named).
    """
    entries = SweepSpec.read(args.spec) if args.spec else {}
    flags = entries_from_flags(models=args.models, seeds=args.seeds, settings=args.settings, tune=args.tune,
                               search=args.search, max_trials=args.max_trials, verbose=args.verbose,
                               **{name: getattr(args, name) for name in TRAIN_OPTIONS})
    for name, value in flags.items():
        entries[name] = {**(entries.get(name) or {}), **value} if name in ("set", "tune") else value
    return SweepSpec.create(entries, where=args.spec or "the command line")


def main(argv=None, prog="nli-zoo sweep"):
    """Runs `nli-zoo sweep` with `argv`.

    Returns:
        `zoo.comparison.tuner.run_sweep`'s `SweepSummary`. A user error prints one line and exits with status 2, an
        interruption with 130; failed trials (listed) exit with status 1.
    """
    args = build_parser(prog).parse_args(argv)
    try:
        spec = spec_from_args(args)
        spec.check(args.dir)  # every run as nli-zoo train would check it: before TensorFlow starts
    except SpecError as error:
        fail(prog, error)
    import_tensorflow()  # its notices filtered (zoo.quiet)
    warnings.filterwarnings("ignore", message="Your input ran out of data")  # as nli-zoo train
    interrupted = ("interrupted: rerun the same command to resume the sweep "
                   "(the trial in progress resumes after its last finished epoch)")
    summary = guarded(prog, lambda: sweep_command(spec, args, prog), interrupted, hint="use another --dir",
                   target=args.dir)
    output(summary_table(summary, args.dir))
    failed = summary.failed()
    if failed:
        stop(prog, f"{len(failed)} trial(s) failed (listed above); rerun the same command to run them again", 1)
    if summary.role != "worker":
        logger.info(f"compare the runs: nli-zoo compare {args.dir}")
    return summary


def summary_table(summary, directory):
    """The sweep's trials as printed: a heading line, then each trial's dev and test accuracy (or its failure)
    and its runs."""
    trials = summary.trials
    lines = [f"{directory}: {len(trials)} trial(s){' run by this worker' if summary.role == 'worker' else ''}"]
    for entry in trials:
        if entry.completed:
            outcome = f"dev {entry.dev_accuracy:.4f}  test {entry.test_accuracy:.4f}"
        else:
            outcome = f"{entry.status.lower()}: {entry.error or ''}"
        lines.append(f"  trial {entry.trial}  {outcome}  {', '.join(entry.runs)}")
    return "\n".join(lines)


def sweep_command(spec, args, prog):
    """Runs the sweep (`main` once the command line is parsed); its errors are one line."""
    try:  # a sweep replaces no run, export or reproduction, and never its data
        check_output(args.dir, "sweep", "--dir", inputs=[args.data_dir])
    except UserError as error:
        fail(prog, error)
    from zoo.comparison.tuner import SweepStopped, run_sweep  # imports KerasTuner, and so TensorFlow: after the filter

    try:
        return run_sweep(spec, args.dir)
    except SweepStopped as error:  # a run's user error (2), or Ctrl-C (130)
        stop(prog, error, error.status)
    except (UserError, CorruptFileError) as error:  # a damaged sweep file names itself and its remedy
        fail(prog, error)
