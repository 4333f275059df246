"""Try models in the browser: `nli-zoo demo RUN_OR_PRESET [RUN_OR_PRESET]` serves a local Gradio page.

Example:
```
nli-zoo demo runs/rocktaschel_wbw runs/esim        # two models side by side
nli-zoo demo presets/esim_tree --port 7870         # a preset; SavedModels (models/esim/1) work too
```
Type a premise and a hypothesis (or pick a shipped SNLI pair): the page shows each model's label, the three
probabilities, its attention heatmaps and, for tree models, the trees it read. The page is served on
127.0.0.1 only. It needs Gradio, the optional extra `nli-zoo[demo]` (the set-up's requirements-dev.txt has it; see
docs/demo.md).
"""

import importlib.util
import logging
import socket
import time

from zoo.commands.messages import output
from zoo.commands.parsing import PORT, CommandParser, fail, guarded
from zoo.errors import UserError

logger = logging.getLogger(__name__)

INSTALL = ('the demo needs Gradio: pip install "gradio>=6.31,<7" (a checkout set up with requirements-dev.txt '
           'has it; pip install ".[demo]" would replace an editable install with a copy)')


PORT_TAKEN = "port {port} of 127.0.0.1 is taken: choose another with --port"


def port_is_free(port):
    """Whether a server could listen on `port` of 127.0.0.1 now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class DemoError(UserError):
    """A user-facing error: printed as one line, exit status 2."""


def build_parser(prog="nli-zoo demo"):
    """The `nli-zoo demo` argument parser."""
    parser = CommandParser(prog=prog, description="Try one or two models on your own sentence pairs "
                                     "in a local web page (Gradio).")
    parser.add_argument("models", nargs="+", metavar="RUN_OR_PRESET",
                        help="a run directory, a preset (folder, hf://..., kaggle://...) or an exported "
                             "SavedModel; give two to compare them side by side")
    parser.add_argument("--port", type=PORT, default=None,
                        help="serve on this port of 127.0.0.1 (default: the first free one from 7860)")
    return parser


def open_models(sources):
    """The `DemoModel`s of the sources (`zoo.demo.models.open_model`).

    Raises:
        DemoError: a source that cannot be loaded (the loader's message).
    """
    from zoo.demo.models import open_model  # TensorFlow and Keras: imported once the arguments are checked

    models = []
    for source in sources:
        try:
            models.append(open_model(source))
        except (OSError, ValueError, UserError) as error:
            raise DemoError(f"{source}: {error}" if source not in str(error) else str(error)) from None
    return models


def demo(args, block=True):
    """Loads the models and serves the page.

    Args:
        args: the parsed arguments.
        block: serve until interrupted (False: return once serving).

    Returns:
        `(app, url)`.
    """
    if len(args.models) > 2:
        raise DemoError(f"give one or two models to compare, not {len(args.models)}")
    if args.port is not None and not 0 < args.port < 65536:
        raise DemoError(f"--port must be 1 to 65535, got {args.port}")
    if importlib.util.find_spec("gradio") is None:
        raise DemoError(INSTALL)
    if args.port is not None and not port_is_free(args.port):  # before the models' seconds of loading
        raise DemoError(PORT_TAKEN.format(port=args.port))
    from zoo.quiet import import_tensorflow
    from zoo.runs.kinds import kind_of, not_a_model

    for source in args.models:  # what each path holds, told from its files: before TensorFlow starts
        if "://" not in source and kind_of(source) is None:
            raise DemoError(not_a_model(source))
    import_tensorflow()  # its notices filtered (zoo.quiet)
    from zoo.demo.app import build_app, launch  # imports Gradio, the optional extra: checked just above

    models = open_models(args.models)
    for model in models:
        if model.note:
            logger.warning(model.note)
    app = build_app(models)
    try:
        url = launch(app, port=args.port)
    except OSError:  # Gradio's message names its own settings, not this command's options
        app.close()
        raise DemoError(PORT_TAKEN.format(port=args.port) if args.port else
                        "no free port from 7860 to 7959 on 127.0.0.1: choose one with --port") from None
    output(f"serving {' and '.join(m.name for m in models)} on {url} (Ctrl+C stops)")  # the page's address
    if block:
        serve_until_interrupted(app)
    return app, url


def serve_until_interrupted(app, tick=0.1):
    """Waits while the page is served. Ctrl+C closes the server and goes on as a `KeyboardInterrupt`, which the
    command ends with its one line and status 130 (Gradio's own `block_thread` prints its words and returns,
    so the command would exit 0)."""
    try:
        while app.is_running:
            time.sleep(tick)
    except KeyboardInterrupt:
        app.close()
        raise


def main(argv=None, prog="nli-zoo demo"):
    """Runs `nli-zoo demo`; a user error prints one line `nli-zoo demo: error: ...` and exits with status 2."""
    args = build_parser(prog).parse_args(argv)
    return guarded(prog, lambda: demo_command(args, prog), "interrupted: the demo stopped")


def demo_command(args, prog):
    """`main` once the command line is parsed."""
    try:
        return demo(args)
    except DemoError as error:
        fail(prog, error)
