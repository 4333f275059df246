"""`nli-zoo reproduce`: a paper's table in one command, the measured columns beside the reported ones.

Examples:
```
nli-zoo reproduce --list                                     # the papers and their rows
nli-zoo reproduce rocktaschel2016 --list                     # one paper's rows, figures and claims
nli-zoo reproduce rocktaschel2016 --rows attention wbw --seeds 2 --dataset snli_sample \\
    --embeddings glove-6b-50d --set hidden_size=16 --epochs 2 --dir repro
nli-zoo reproduce chen2017 --seeds 3 --dir repro --dry-run   # what would train, and an epoch's time here
```
The rows train as one sweep (`nli-zoo sweep`'s machinery: rerun the same command to resume; KerasTuner's
distributed mode shares it among processes), then the report is printed and written to
DIR/reports/PAPER (reproduction.md, .json, .png, TensorBoard logs). See docs/reproduce.md.
"""

import json
import logging
import os
import warnings

from zoo.commands.messages import output
from zoo.commands.options import add_train_options
from zoo.commands.parsing import FOLDER_TO_WRITE, RESAMPLES, SEED, STEPS, CommandParser, fail, guarded, stop
from zoo.comparison import statistics
from zoo.comparison.spec import TRAIN_OPTIONS, SpecError
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.quiet import import_tensorflow
from zoo.reproduction.estimate import DEFAULT_STEPS
from zoo.reproduction.tables import load_paper, paper_keys
from zoo.runs.targets import check_output

logger = logging.getLogger(__name__)


def build_parser(prog="nli-zoo reproduce"):
    """The `nli-zoo reproduce` argument parser."""
    parser = CommandParser(
        prog=prog, fit_verbosity=True,
        description="Train a paper's rows (its models and ablation settings) over seeds and print its "
                    "table with the measured columns, intervals and its claims as paired tests; "
                    "rerun the same command to resume.")
    parser.add_argument("paper", nargs="?", default=None, help=f"the paper: {', '.join(paper_keys())}")
    parser.add_argument("--list", action="store_true", help="list the papers and their rows (with PAPER: its rows, "
                                                            "reported figures and claims) and stop")
    parser.add_argument("--rows", nargs="+", default=None, metavar="ROW", help="the rows to train (ids from --list; "
                                                                               "default: every runnable row)")
    parser.add_argument("--seeds", default=None, help="N: seeds 0..N-1 (default 1), or a comma list A,B,...")
    parser.add_argument("--dir", default=None, type=FOLDER_TO_WRITE,
                        help="the reproduction directory (DIR/runs, DIR/sweeps, DIR/reports); "
                             "rerun to resume; several papers may share it")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a preset setting of every run, as nli-zoo train --set (not a row's own switch)")
    add_train_options(parser, vectors="each row's paper vectors")
    parser.add_argument("--dry-run", action="store_true",
                        help="list what would be trained, each run's state, and an epoch's time on this machine "
                             "estimated from a few timed training steps; train nothing")
    parser.add_argument("--timed-steps", type=STEPS, default=DEFAULT_STEPS,
                        help=f"with --dry-run: training steps timed per model (default {DEFAULT_STEPS})")
    parser.add_argument("--out", default=None, type=FOLDER_TO_WRITE,
                        help="where to write the report (default DIR/reports/PAPER)")
    parser.add_argument("--resamples", type=RESAMPLES, default=statistics.RESAMPLES,
                        help=f"bootstrap resamples (default {statistics.RESAMPLES})")
    parser.add_argument("--bootstrap-seed", type=SEED, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--no-tensorboard", action="store_true", help="do not write the TensorBoard summaries")
    return parser


def listing(key=None):
    """The lines of `--list`: every paper's rows, or one paper's in full."""
    lines = []
    for paper in [load_paper(key)] if key else [load_paper(k) for k in paper_keys()]:
        lines.append(f"{paper.key}: {paper.citation}")
        for row in paper.rows:
            tables = ", ".join(row.printed)
            what = (f"{row.model}" + "".join(f" {k}={json.dumps(v)}" for k, v in row.settings.items())
                    + (f" of {' + '.join(u.name for u in row.units())}" if row.members else "")
                    if row.runnable else f"not runnable: {row.not_runnable}")
            figures = ", ".join(f"{c} {v}" for c, v in row.reported.items() if v is not None)
            lines.append(f"  {row.id:<24} {row.name} ({tables}){' [' + row.cited + ']' if row.cited else ''}: {what}"
                         + (f"; reported {figures}" if key else ""))
        if key:
            lines.append("  claims:")
            lines += [f"    {c.describe(paper)} ({c.a} vs {c.b}, {c.where})" for c in paper.claims] or ["    none"]
    return lines


def main(argv=None, prog="nli-zoo reproduce"):
    """Runs `nli-zoo reproduce` with `argv`.

    Returns:
        `zoo.reproduction.reproduce.reproduce`'s result (with `--dry-run`: the plan; with `--list`: None).
        A user error prints one line and exits with status 2, an interruption with 130; failed runs (listed)
        with 1.
    """
    args = build_parser(prog).parse_args(argv)
    interrupted = ("interrupted: rerun the same command to resume "
                   "(the run in progress resumes after its last finished epoch)")
    return guarded(prog, lambda: reproduce_command(args, prog), interrupted, hint="use another --dir",
                   target=args.dir)


def reproduce_command(args, prog):
    """`main` once the command line is parsed."""
    try:
        if args.list or args.paper is None:
            if args.paper is None and not args.list:
                raise UserError(f"name a paper ({', '.join(paper_keys())}), or --list")
            output("\n".join(listing(args.paper)))
            return None
        if not args.dir:
            raise UserError("--dir is required: the reproduction directory (rerun with the same --dir to resume)")
        if args.resamples < 100:
            raise UserError(f"--resamples must be at least 100, got {args.resamples}")
        from zoo.reproduction.plan import ReproductionSpec, check_directory, check_sources, select_rows

        paper = load_paper(args.paper)
        rows = select_rows(paper, args.rows)
        spec = ReproductionSpec.of(rows, seeds=args.seeds, settings=args.settings, verbose=args.verbose,
                                   **{name: getattr(args, name) for name in TRAIN_OPTIONS})
        check_output(args.dir, "reproduction", "--dir", inputs=[args.data_dir])
        if args.out:
            check_output(args.out, "report", "--out", inputs=[args.data_dir])
        check_sources(spec)
        check_directory(args.dir)
    except (UserError, SpecError) as error:
        fail(prog, error)
    import_tensorflow()  # its informational start-up lines filtered (zoo.quiet)
    warnings.filterwarnings("ignore", message="Your input ran out of data")  # as nli-zoo train
    check_inputs(prog, paper, spec, args)  # offline: one line naming the data and vector options, nothing written
    if args.dry_run:
        return dry_run(prog, paper, rows, spec, args)
    from zoo.comparison.tuner import SweepStopped
    from zoo.reproduction.markdown import to_markdown
    from zoo.reproduction.reproduce import reproduce

    try:
        result = reproduce(paper, rows, spec, args.dir, resamples=args.resamples, seed=args.bootstrap_seed,
                           out=args.out, tensorboard=not args.no_tensorboard)
    except SweepStopped as error:  # a run's user error (2), or Ctrl-C (130)
        stop(prog, error, error.status)
    except (UserError, CorruptFileError) as error:
        fail(prog, error)
    if result.role == "worker":
        logger.info(f"this worker's trials are done; the chief writes the report ({len(result.trials)} trial(s))")
        return result
    output("\n" + to_markdown(result.report))
    paths = result.paths
    logger.info(f"written: {paths['markdown']}, {paths['json']}, {paths['chart']}"
                + (f"; TensorBoard: tensorboard --logdir {paths['logs']}" if paths["logs"] else ""))
    failed = result.report.failed_rows()
    if failed:
        stop(prog, f"runs of row(s) {', '.join(failed)} failed (their verdicts say why); rerun the same command to "
                   "train them again", 1)
    return result


def check_inputs(prog, paper, spec, args):
    """Stops at once, as `nli-zoo train` does, when a unit's corpus or word vectors must be downloaded and
    cannot be (offline): one line naming the offline options of both, before any folder is made (no failed
    trials, no `sweeps/`). The vectors are fetched now (once, for every run), or only checked for a dry run."""
    from zoo.reproduction.plan import SWEEPS_DIR
    from zoo.training.config import RunConfig
    from zoo.training.inputs import check_available

    sweep_dir = os.path.join(args.dir, SWEEPS_DIR, spec.sweep_name(paper.key))
    needed = set()
    try:
        for unit in spec.units:
            config = RunConfig.create(**spec.train_options({"unit": unit.name}, spec.seeds[0], sweep_dir))
            needed.add((config.embeddings, config.source))
        for embeddings, source in sorted(needed, key=str):
            check_available(embeddings, source, fetch=not args.dry_run)
    except UserError as error:
        fail(prog, error)


def dry_run(prog, paper, rows, spec, args):
    """`--dry-run`: checks every run's settings, prints the plan with each unit's time per epoch."""
    from zoo.reproduction.estimate import describe, estimate
    from zoo.reproduction.plan import SWEEPS_DIR, check_runs

    try:
        sweep_dir = os.path.join(args.dir, SWEEPS_DIR, spec.sweep_name(paper.key))
        spec.check(sweep_dir)
        check_runs(spec, sweep_dir)
        plan = estimate(spec, args.dir, steps=args.timed_steps)
    except (UserError, CorruptFileError) as error:
        fail(prog, error)
    ensembles = [(row.id, [u.name for u in row.units()]) for row in rows if row.members]
    output("\n".join([f"{paper.key}: rows {', '.join(r.id for r in rows)}"] + describe(plan, ensembles)))
    return plan
