"""`nli-zoo compare`: one table of runs, seeds grouped, with intervals and paired tests.

Examples:
```
nli-zoo compare sweeps/small                      # every run below the sweep directory
nli-zoo compare 'runs/esim*' runs/him             # run directories and glob patterns
nli-zoo compare sweeps/small --pair 1 2           # only that pair (an error if their test items differ)
```
Runs that differ only by seed form a group: its mean test accuracy, standard deviation, the 95% intervals
of the mean and of one more run (the seeds' spread and the test items' variance together), the bootstrap
interval over the items alone (and per class), the best dev epoch of each run; every two groups scored on
the same test items are paired: the test whose unit is the run (seeds and items; Holm-adjusted) with the
seeds that would resolve the difference, the paired bootstrap over the items, and McNemar's exact test per
seed. Written as OUT/comparison.md, comparison.json, comparison.png and TensorBoard summaries in OUT/logs
(OUT: `--out`, default DIR/comparison for one folder of runs, else ./comparison). See docs/comparisons.md.
"""

import logging
import os

from zoo.commands.messages import output
from zoo.commands.parsing import FOLDER_TO_WRITE, RESAMPLES, SEED, CommandParser, fail, guarded
from zoo.comparison import statistics
from zoo.comparison.report import compare_paths, find_compared, to_markdown, write
from zoo.errors import UserError
from zoo.fileio import CorruptFileError
from zoo.runs.targets import check_output

logger = logging.getLogger(__name__)


def build_parser(prog="nli-zoo compare"):
    """The `nli-zoo compare` argument parser."""
    parser = CommandParser(
        prog=prog, description="Compare finished runs: seeds grouped, mean, std and the intervals of test accuracy "
                               "(of the mean and of one more run, seeds and items together; items only), "
                               "run-level and paired tests between groups on the same test items.")
    parser.add_argument("runs", nargs="+", metavar="RUN|DIR|GLOB",
                        help="run directories, folders holding runs (a sweep), or glob patterns (quoted)")
    parser.add_argument("--pair", nargs=2, action="append", default=None, metavar=("A", "B"),
                        help="test only these two groups (numbers or labels from the table; repeatable); they must "
                             "have been scored on the same test items")
    parser.add_argument("--out", default=None, type=FOLDER_TO_WRITE,
                        help="where to write comparison.md/.json/.png and logs/ (default DIR/comparison for one "
                             "folder of runs, else ./comparison)")
    parser.add_argument("--resamples", type=RESAMPLES, default=statistics.RESAMPLES,
                        help=f"bootstrap resamples (default {statistics.RESAMPLES})")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--no-tensorboard", action="store_true", help="do not write the TensorBoard summaries")
    return parser


def default_out(arguments):
    """DIR/comparison when the one argument is a folder of runs (not a run itself), else ./comparison."""
    if len(arguments) == 1 and os.path.isdir(arguments[0]) and not os.path.exists(
            os.path.join(arguments[0], "config.json")):
        return os.path.join(arguments[0], "comparison")
    return "comparison"


def main(argv=None, prog="nli-zoo compare"):
    """Runs `nli-zoo compare` with `argv`.

    Returns:
        the `zoo.comparison.records.Comparison` (written as comparison.json). A user error prints one line and
        exits with status 2.
    """
    args = build_parser(prog).parse_args(argv)
    return guarded(prog, lambda: compare_command(args, prog), hint="write the comparison elsewhere with --out",
                   target=args.out or default_out(args.runs))


def compare_command(args, prog):
    """`main` once the command line is parsed: compares, prints the table (Markdown) and writes the files."""
    try:
        if args.resamples < 100:
            raise UserError(f"--resamples must be at least 100, got {args.resamples}")
        out = args.out or default_out(args.runs)
        runs, skipped = find_compared(args.runs)
        check_output(out, "report", "--out" if args.out else "the default --out",  # before the bootstrap's minutes
                     inputs=[run.run_dir for run in runs] + [path for path in args.runs if os.path.isdir(path)])
        comparison = compare_paths(args.runs, pairs=args.pair, resamples=args.resamples, seed=args.seed,
                                   found=(runs, skipped))
    except (UserError, CorruptFileError) as error:
        fail(prog, error)
    output(to_markdown(comparison))
    if not args.no_tensorboard:
        from zoo.quiet import import_tensorflow

        import_tensorflow()  # its informational start-up lines filtered (zoo.quiet)
    paths = write(comparison, out, tensorboard=not args.no_tensorboard)
    logger.info(f"written: {paths['markdown']}, {paths['json']}, {paths['chart']}"
                + (f"; TensorBoard: tensorboard --logdir {paths['logs']}" if paths["logs"] else ""))
    return comparison
