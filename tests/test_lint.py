"""The linter is part of the test command: `ruff check .` (rules and line length in pyproject.toml's
[tool.ruff]) must find nothing. ruff is pinned in requirements-dev.txt, so a missing ruff fails here too."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing():
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (
        f"ruff check . found problems (`ruff check --fix .` fixes import order):\n{result.stdout}{result.stderr}")
