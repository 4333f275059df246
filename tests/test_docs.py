"""The documentation as a reader meets it: README is a front door, every link in it and in docs/ leads
somewhere (a file of the checkout, and where a link names a section, a heading of that file), and every
command line it shows (`python train.py ...`, `nli-zoo COMMAND ...`) is one the command's parser takes."""

import os
import pathlib
import re
import shlex

import pytest

from tests.support.docs import lenient_parser

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces turned into hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def links(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for m in LINK.finditer(text):
        target = m.group(1)
        if not re.match(r"[a-z]+:", target):  # http:, https:, mailto: are not checked (no network)
            yield target


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move reference material to docs/"
    head = "\n".join(lines[:15])
    assert "pip install -r requirements-dev.txt" in head and "python -m pytest" in head
    assert "python train.py --model rocktaschel_wbw" in head


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_anchor_rule_matches_github():
    assert github_anchor("Evaluation (`evaluate.py`)") == "evaluation-evaluatepy"
    assert github_anchor("Tree models: parses in the request") == "tree-models-parses-in-the-request"
    assert github_anchor("A cluster of workers (`--strategy multi_worker`)") == "a-cluster-of-workers---strategy-multi_worker"


# Every command line the documentation shows, parsed by the command's own parser -----------------------------
SCRIPTS = {"train.py": "train", "evaluate.py": "evaluate", "predict.py": "predict", "export.py": "export"}


def shown_commands(path):
    """`(line, command, argv)` of every `python SCRIPT.py ...` and `nli-zoo COMMAND ...` line in the page's code
    blocks (continuations joined, comments and environment assignments dropped; a usage synopsis with
    `[optional]` parts or `...` is left out)."""
    from zoo.commands import COMMANDS

    for block in FENCE.findall(path.read_text(encoding="utf-8")):
        text = re.sub(r"\\\n\s*", " ", "\n".join(block.splitlines()[1:-1]))
        for line in text.splitlines():
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            parts = [[]]
            for word in words:  # one shell line may hold several commands
                parts.append([]) if word in ("&&", "||", ";", "|") else parts[-1].append(word)
            for argv in parts:
                while argv and re.match(r"^[A-Z_]+=", argv[0]):
                    argv = argv[1:]
                if any(w.startswith("[") or "..." in w for w in argv):
                    continue
                if len(argv) > 1 and argv[0] == "python" and os.path.basename(argv[1]) in SCRIPTS:
                    yield line.strip(), SCRIPTS[os.path.basename(argv[1])], argv[2:]
                elif len(argv) > 1 and argv[0] == "nli-zoo" and argv[1] in COMMANDS:
                    yield line.strip(), argv[1], argv[2:]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_line_shown_parses(page):
    refused = []
    for line, command, argv in shown_commands(page):
        try:
            lenient_parser(command).parse_args(argv)
        except SystemExit:
            refused.append(line)
    assert not refused, f"{page.relative_to(ROOT)}: the parsers refuse " + " / ".join(refused)


def test_the_command_lines_are_found():
    found = [(command, argv) for page in PAGES for _, command, argv in shown_commands(page)]
    assert len(found) > 40 and {command for command, _ in found} >= {"train", "evaluate", "predict", "export",
                                                                     "sweep", "compare", "reproduce", "demo"}
    assert ("train", ["--model", "rocktaschel_wbw", "--dataset", "snli_sample", "--embeddings", "glove-6b-50d",
                      "--epochs", "3"]) in found
    for refused in (["--model", "esim", "--batch-size", "0"], ["--model", "esim", "--no-such-flag"]):
        with pytest.raises(SystemExit):  # lenient with paths only
            lenient_parser("train").parse_args(refused)
