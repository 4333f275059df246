"""Measures how exactly `Tokenizer(lowercase=False)` reproduces the leaves of the SNLI binary parses.

Usage:
    python scripts/tokenizer_agreement.py                      # the shipped sample (all its splits)
    python scripts/tokenizer_agreement.py --jsonl snli_1.0_dev.jsonl [--show 20]

Prints the exact-match rate per sentence and per token (tokens aligned with difflib), and the first
disagreements.
"""

import difflib
import glob
import os


from zoo.commands.parsing import CommandParser
from zoo.data.archives import DataFiles  # noqa: E402
from zoo.data.records import file_records  # noqa: E402
from zoo.data.snli import SAMPLE_DIR  # noqa: E402
from zoo.data.tokenizer import Tokenizer  # noqa: E402
from zoo.data.trees import leaves, parse_binary_parse  # noqa: E402


def read_pairs(paths):
    """Yields (sentence, leaves) for both sentences of every record with a binary parse (labelled or not),
    read by the library's record parser (`FILE:LINE` errors) and tree parser."""
    for path in paths:
        folder, name = os.path.split(os.path.abspath(path))
        with DataFiles(folder) as files, files.lines(name) as lines:
            for lineno, record in file_records(lines, path):
                for k, sentence in (("1", "premise"), ("2", "hypothesis")):
                    parse = record.get(f"sentence{k}_binary_parse")
                    if parse:
                        tree = parse_binary_parse(parse, pair_id=f"{path}:{lineno}", sentence=sentence)
                        yield record[f"sentence{k}"], leaves(tree)


def main(argv=None):
    parser = CommandParser(prog="tokenizer_agreement.py", description=__doc__.splitlines()[0])
    parser.add_argument("--jsonl", nargs="*", help="SNLI jsonl files (default: the shipped sample)")
    parser.add_argument("--show", type=int, default=10, help="disagreements to print")
    args = parser.parse_args(argv)
    paths = args.jsonl or sorted(glob.glob(os.path.join(SAMPLE_DIR, "*.jsonl")))
    pairs = list(read_pairs(paths))
    predicted = Tokenizer(lowercase=False).tokenize_batch([s for s, _ in pairs])
    same_sentences = same_tokens = total_tokens = 0
    shown = 0
    for (sentence, gold), pred in zip(pairs, predicted):
        total_tokens += len(gold)
        matcher = difflib.SequenceMatcher(a=gold, b=pred, autojunk=False)
        same_tokens += sum(block.size for block in matcher.get_matching_blocks())
        if gold == pred:
            same_sentences += 1
        elif shown < args.show:
            shown += 1
            print(f"- {sentence!r}\n  parse: {gold}\n  ours:  {pred}")
    n = len(pairs)
    print(f"files: {', '.join(os.path.relpath(p) for p in paths)}")
    print(f"sentences: {n}, identical token sequence: {same_sentences} ({100 * same_sentences / max(n, 1):.2f}%)")
    print(f"parse tokens: {total_tokens}, reproduced (aligned): {same_tokens} "
          f"({100 * same_tokens / max(total_tokens, 1):.2f}%)")


if __name__ == "__main__":
    main()
