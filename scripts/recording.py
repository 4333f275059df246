"""What every benchmark script shares on its command line: `--record` (append this run's figures to
`results/<benchmark>/<machine id>.jsonl`, `zoo.measurements.record`) and `--results DIR` (another folder
of records, e.g. for a trial run). Imported by the scripts as a sibling (`python scripts/x.py` puts
scripts/ first on the path).
"""

import os

from zoo.commands.parsing import FOLDER_TO_WRITE
from zoo.measurements.record import append_record, make_record

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def add_record_options(parser):
    parser.add_argument("--record", action="store_true",
                        help="append this run's figures, its machine and versions to "
                             "results/<benchmark>/<machine id>.jsonl (render them: scripts/render_results.py)")
    parser.add_argument("--results", type=FOLDER_TO_WRITE, default=None,
                        help="the records' folder for --record (default: the checkout's results/)")


def save(args, benchmark, figures, info, **options):
    """With `--record`: appends the run's record (`make_record(benchmark, figures, info, **options)`) and
    prints where; returns the path (None without `--record`)."""
    if not args.record:
        return None
    path = append_record(make_record(benchmark, figures, info, **options), args.results or RESULTS)
    print(f"recorded {len(figures)} figure(s) in {path}", flush=True)
    return path


def reference_command(torch_python, program, spec, reference_dir):
    """The command and environment of a PyTorch reference program (`scripts/reference/PROGRAM`): PyTorch's
    python, with the reference's checkout (its `esim` package) and the zoo's folder (`zoo.measurements`,
    standard library only) on PYTHONPATH."""
    import json

    import zoo

    paths = [os.path.abspath(reference_dir), os.path.dirname(os.path.dirname(os.path.abspath(zoo.__file__)))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference", program)
    return [torch_python, program, json.dumps(spec)], env
