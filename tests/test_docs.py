"""The documentation as a reader meets it: README is a front door, and every link in it and in docs/ leads
somewhere (a file of the checkout, and where a link names a section, a heading of that file)."""

import pathlib
import re

import pytest

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
    assert len(lines) < 250, f"README.md has {len(lines)} lines: move reference material to docs/"
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
