"""Checks the papers' tables of `nli-zoo reproduce` (zoo/reproduction/papers/*.json) against the papers' text.

    python scripts/check_paper_tables.py PAPERS_DIR            # every paper
    python scripts/check_paper_tables.py PAPERS_DIR chen2017   # one

PAPERS_DIR holds the plain-text copies the files name (`"text"`), e.g. the project's shared papers folder.
For every row of every table the row is printed in, the script finds the table in the text (from its
header line to the next blank line), then the line that holds the row's reported figures, in the order
of the table's columns (a figure of null, printed "-" or left empty, is not looked for): a line that
starts with a name must hold the row's printed name; a line of figures only (the text of some tables
prints several names on one line and their figures below it) must come after the line of the row
before it, and the row's name after that row's name. The tables' captions, the data and word vectors
as printed and every claim's quotation must be in the text too (whitespace aside).

It prints one line per checked row with its figures and the line of the text they are on, and ends with
status 1 if anything was not found. It reads only PAPERS_DIR and the zoo's own files (the test suite
checks the files' structure without the papers: tests/test_reproduce.py).
"""

import os
import re
import sys


from zoo.commands.parsing import CommandParser
from zoo.reproduction.tables import load_paper, paper_keys  # noqa: E402


def normalize(text):
    return re.sub(r"\s+", " ", text).strip()


def tokens(line):
    """The line's whitespace-separated cells, without markup (`<b>88.6</b>` -> `88.6`, `$` dropped)."""
    return [t for t in (re.sub(r"<[^>]*>|\$", "", word) for word in line.split()) if t]


def printed(value):
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def is_subsequence(wanted, cells):
    position = 0
    for cell in cells:
        if position < len(wanted) and cell == wanted[position]:
            position += 1
    return position == len(wanted)


def table_block(lines, header):
    """`(first line number, lines)` of the table whose header line starts with `header`."""
    for start, line in enumerate(lines):
        if line.startswith(header):
            end = start + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            return start, lines[start:end]
    return None, []


def has_name(line):
    first = line.split("\t")[0]
    return bool(re.search(r"[A-Za-z]", first))


def check_paper(paper, folder):
    """Returns `(ok lines, problem lines)`."""
    path = os.path.join(folder, paper.text)
    with open(path, encoding="utf-8") as file:
        text = file.read()
    lines, flat = text.splitlines(), normalize(text)
    ok, problems = [], []
    quoted = [("data", paper.data["as_printed"]), ("vectors", paper.vectors["as_printed"])]
    quoted += [(f"claim {c.a} {c.kind} {c.b} ({c.where})", c.quote) for c in paper.claims]
    quoted += [(f"{name} caption", table["caption"]) for name, table in paper.tables.items()]
    for what, quote in quoted:
        (ok if normalize(quote) in flat else problems).append(f"{paper.key}: {what}: {quote!r}")
    for name, table in paper.tables.items():
        start, block = table_block(lines, table["header"])
        if not block:
            problems.append(f"{paper.key}: {name}: no line starts with {table['header']!r}")
            continue
        block_text = "\n".join(block)
        last_line, last_name = 0, 0
        for row in paper.rows:
            if name not in row.printed:
                continue
            row_name = row.printed[name]
            wanted = [printed(row.reported[c]) for c in table["columns"] if row.reported.get(c) is not None]
            found = None
            for index, line in enumerate(block):  # a line that names the row
                if row_name in line and is_subsequence(wanted, tokens(line.split(row_name, 1)[1])):
                    found = index
                    break
            position = block_text.find(row_name, last_name)
            if found is None and position >= 0:  # a line of figures only, after the row before
                for index in range(last_line, len(block)):
                    if not has_name(block[index]) and is_subsequence(wanted, tokens(block[index])):
                        found = index
                        break
            shown = ", ".join(f"{c} {printed(row.reported[c])}" for c in table["columns"]
                              if row.reported.get(c) is not None)
            if found is None:
                problems.append(f"{paper.key}: {name} row {row.id} {row_name!r}: {shown}: not found")
                continue
            if has_name(block[found]):
                position = block_text.find(row_name, sum(len(b) + 1 for b in block[:found]))
            last_line, last_name = found, position + len(row_name)
            ok.append(f"{paper.key}: {name} row {row.id} {row_name!r}: {shown} (line {start + found + 1})")
    return ok, problems


def main(argv=None):
    parser = CommandParser(prog="check_paper_tables.py", description="Check the reproduce tables against the papers' text.")
    parser.add_argument("papers_dir", help="the folder of the papers' plain text")
    parser.add_argument("papers", nargs="*", help=f"paper keys (default: all: {', '.join(paper_keys())})")
    args = parser.parse_args(argv)
    failed = 0
    for key in args.papers or paper_keys():
        ok, problems = check_paper(load_paper(key), args.papers_dir)
        for line in ok:
            print(f"ok       {line}")
        for line in problems:
            print(f"MISSING  {line}")
        failed += len(problems)
    print(f"{'all found' if not failed else f'{failed} not found'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
