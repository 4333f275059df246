"""The documentation's pages and their examples, as the docs tests read them.

`examples(page)` gives every fenced `bash` and `python` block of a page in order, with the reason given by a
`<!-- docs-examples: check-only: REASON -->` line right before the block, when it has one (a block that needs
the network, the full SNLI, a server or a GPU, or runs for minutes: its syntax and flags are checked, it is
not run). `commands(text)` splits a bash block into the commands it runs; `lenient_parser(command)` is the
parser of an `nli-zoo` command with its path checks off.
"""

import dataclasses
import importlib
import pathlib
import re
import shlex

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The order a reader meets the pages: README's first run, the guide, then the pages it links.
READING_ORDER = ["README.md", "docs/guide.md", "docs/training.md", "docs/resuming.md", "docs/hardware.md",
                 "docs/data.md", "docs/models.md", "docs/diagnostics.md", "docs/serving.md", "docs/tf-serving.md",
                 "docs/presets.md", "docs/comparisons.md", "docs/reproduce.md", "docs/demo.md", "docs/speed.md",
                 "docs/architecture.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"<!--\s*docs-examples:\s*check-only:\s*(.+?)\s*-->\s*$", re.S)
SCRIPTS = {"train.py": "train", "evaluate.py": "evaluate", "predict.py": "predict", "export.py": "export"}
PATH_TYPES = {"path_to_read", "path_to_write", "report_path"}  # the docs' paths are the reader's, not the checkout's


@dataclasses.dataclass
class Example:
    page: str
    line: int
    language: str
    text: str
    check_only: str  # the reason the block is not run, "" for a block that runs

    def __str__(self):
        return f"{self.page}:{self.line}"


def examples(page):
    """The `bash` and `python` blocks of `page` (a path relative to the checkout), in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) not in ("bash", "python"):
            continue
        before = text[:match.start()].rstrip("\n")
        mark = MARK.search(before.rsplit("\n", 1)[-1])
        found.append(Example(page, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                             mark.group(1) if mark else ""))
    return found


def commands(text):
    """`(environment, argv, line)` of every command of a bash block: continuations joined, comments dropped, a
    line cut at `&&` and `;`, leading `NAME=value` assignments taken apart; `line` is the whole source line."""
    found = []
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        words = shlex.split(line, comments=True)
        parts = [[]]
        for word in words:
            parts.append([]) if word in ("&&", ";") else parts[-1].append(word)
        for argv in parts:
            environment = {}
            while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
                name, _, value = argv[0].partition("=")
                environment[name] = value
                argv = argv[1:]
            if argv:
                found.append((environment, argv, line))
    return found


def zoo_command(argv):
    """`(command, arguments)` of `python train.py ...` (and the other scripts) or `nli-zoo COMMAND ...`, else
    None."""
    from zoo.commands import COMMANDS

    if len(argv) > 1 and argv[0] == "python" and argv[1] in SCRIPTS:
        return SCRIPTS[argv[1]], argv[2:]
    if len(argv) > 1 and argv[0] == "nli-zoo" and argv[1] in COMMANDS:
        return argv[1], argv[2:]
    return None


def lenient_parser(command):
    """The command's parser with its path checks off (it checks every flag, value kind and choice)."""
    module = importlib.import_module(f"zoo.commands.{command}")
    parser = module.build_parser(f"nli-zoo {command}")
    for action in parser._actions:  # argparse's own list of the options, the public way to walk them
        if getattr(action.type, "__name__", None) in PATH_TYPES:
            action.type = str
    return parser
