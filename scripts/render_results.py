"""The tables of README.md and docs/*.md rendered from the records under results/ (zoo.measurements).

    python scripts/render_results.py            # rewrite every results block from the records
    python scripts/render_results.py --check    # exit 1, naming each stale table, when a page differs

A block is the lines between `<!-- results: TABLE_ID -->` and `<!-- /results -->`; the table ids are
serving, training, suite, loop-crossover and machines (`zoo.measurements.render.TABLES`).
"""

import glob
import os
import sys

from zoo.commands.parsing import FOLDER_TO_READ, CommandParser
from zoo.errors import UserError
from zoo.fileio import atomic_write
from zoo.measurements.record import load_results
from zoo.measurements.render import render_blocks, stale_tables

PROG = "render_results.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pages(root):
    """README.md and docs/*.md under `root`."""
    return [p for p in [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
            if os.path.isfile(p)]


def run(root, results_dir, check):
    results = load_results(results_dir)
    stale, written = [], []
    for path in pages(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        where = os.path.relpath(path, root)
        if check:
            stale += [f"{where}: {table}" for table in stale_tables(text, results, where)]
            continue
        new, ids = render_blocks(text, results, where)
        if new != text:
            with atomic_write(path, "w", encoding="utf-8") as f:
                f.write(new)
            written.append(f"{where} ({', '.join(ids)})")
    if check:
        for line in stale:
            print(f"{PROG}: stale table {line}: run python scripts/render_results.py", file=sys.stderr)
        return 1 if stale else 0
    print("rendered " + ("; ".join(written) if written else "nothing: every table is up to date"))
    return 0


def main(argv=None):
    parser = CommandParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a table is stale")
    parser.add_argument("--root", type=FOLDER_TO_READ, default=ROOT, help="the checkout (default: this one)")
    parser.add_argument("--results", type=FOLDER_TO_READ, default=None, help="the records (default: ROOT/results)")
    args = parser.parse_args(argv)
    try:
        return run(args.root, args.results or os.path.join(args.root, "results"), args.check)
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
