"""The command lines: `nli-zoo train | evaluate | predict | export | models | sweep | compare | reproduce | demo |
tune`
(installed by `pip install .`).

Each subcommand is a module of this package with `build_parser(prog)` and `main(argv, prog)`; the
top-level scripts `train.py`, `evaluate.py`, `predict.py` and `export.py` of a checkout call the same
`main` through `run`. A user error prints one line `PROG: error: ...` and exits with status 2.

Every command parses and checks its arguments, and the files they name, before it imports TensorFlow or
Keras: `--help`, a usage error and `nli-zoo models` answer in a fraction of a second.
"""

import importlib
import logging
import sys

from zoo.quiet import filter_stderr, quiet_environment

COMMANDS = {
    "train": "train a model with its paper preset (rerun to resume)",
    "evaluate": "score a run, a preset, a SavedModel or a TFLite model on any labelled NLI data",
    "predict": "label sentence pairs and show what the model attended to",
    "export": "export a run: SavedModel (TF Serving), TFLite, or a preset directory",
    "models": "list the registered models, or show one's paper preset",
    "sweep": "train models x seeds x settings, or a random or Bayesian search (KerasTuner); rerun to resume",
    "compare": "compare runs: seeds grouped, intervals, paired tests (Markdown, JSON, chart, TensorBoard)",
    "reproduce": "reproduce a paper's table: its rows over seeds, beside the reported figures, claims tested",
    "demo": "try one or two models on your own pairs in a local web page (Gradio)",
    "tune": "time the bi-LSTM's few-rows loops on this machine once and record the faster (export, predict, demo)",
}


def main(argv=None):
    """`nli-zoo COMMAND [options]`: runs the subcommand's `main` with the rest of the arguments.

    Returns:
        the exit status, 0 (the console script exits with it; a subcommand's result is for Python callers of
        its own `main`). User errors exit with status 2 from inside the subcommand.
    """
    from zoo.commands.messages import output
    from zoo.commands.parsing import fail

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        output("usage: nli-zoo COMMAND [options]   (nli-zoo COMMAND --help for a command's options)\n\ncommands:\n"
               + "\n".join(f"  {name:<10} {what}" for name, what in COMMANDS.items()))
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        fail("nli-zoo", f"unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)}")
    run(argv[0], argv[1:], prog=f"nli-zoo {argv[0]}")
    return 0


def run(command, argv=None, prog=None):
    """Runs `command` as this process's command line (`nli-zoo COMMAND`, or the script `COMMAND.py`): with
    TensorFlow's log level set and its notices filtered out of the process's stderr for its whole life
    (`zoo.quiet`), then the subcommand's `main`.

    Returns:
        what the subcommand's `main` returns.
    """
    quiet_environment()
    filter_stderr()
    # The process's command line prints the zoo's messages itself (zoo.commands.messages): they do not go on to
    # a handler another library gives the root logger as well (absl's `logging.basicConfig()`, during a TFLite
    # conversion, printed each again as `INFO:zoo...`).
    logging.getLogger("zoo").propagate = False
    module = importlib.import_module(f"zoo.commands.{command}")
    return module.main(argv, prog=prog or f"{command}.py")
