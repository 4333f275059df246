"""Prints every registered model's trainable parameter count beside the paper's |θ|_M.

|θ|_M counts the parameters outside the word-vector table. Models are built at the papers' sizes
with 300-d input word vectors, as in the papers.

    python scripts/param_table.py [--pattern 'rocktaschel*'] [--markdown]
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from zoo.commands.parsing import CommandParser
import zoo  # noqa: E402
from zoo.registry import get_spec  # noqa: E402


def rows(pattern):
    for name in zoo.list_models(pattern):
        spec = get_spec(name)
        model = zoo.create_model(name, vocabulary_size=10, embedding_dim=300, tunable_words="all")
        ours = model.count_params_without_embeddings()
        paper = spec.paper_params
        gap = None if not paper else 100.0 * (ours - paper) / paper
        yield name, ours, paper, gap, spec.paper


def main():
    parser = CommandParser(prog="param_table.py", description=__doc__.splitlines()[0])
    parser.add_argument("--pattern", default="*")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    if args.markdown:
        print("| model | ours | paper | gap | paper row |")
        print("|---|---:|---:|---:|---|")
    for name, ours, paper, gap, source in rows(args.pattern):
        paper_s = f"{paper:,}" if paper else "-"
        gap_s = f"{gap:+.1f}%" if gap is not None else "-"
        if args.markdown:
            print(f"| `{name}` | {ours:,} | {paper_s} | {gap_s} | {source} |")
        else:
            print(f"{name:38s} {ours:>12,} {paper_s:>12} {gap_s:>8}  {source}")


if __name__ == "__main__":
    main()
