"""Every example of README.md and docs/ runs as pasted, in the order a reader meets them.

The pages run one after another in one scratch folder (`READING_ORDER`: README's first run, then the guide
and the pages it links), each `bash` and `python` block in turn: `python train.py ...` (and the other scripts)
and `nli-zoo COMMAND ...` through the command's own `main` in this process, the few shell commands a page
uses to make a file in a subprocess, and a page's Python blocks in one namespace, as one interpreter session.
Trainings are shrunk (`shrunk_runs`: a few dozen pairs, one epoch, no images), which the pages do not show:
what is checked is that every command and line runs and exits with status 0, not its figures. A block marked
`<!-- docs-examples: check-only: REASON -->` (the network, the full SNLI, a server, a GPU, minutes of
measuring) is checked for its syntax (bash -n, compile) and every zoo command line in it for its flags
(the command's parser, paths not checked); the blocks of each kind are counted.
"""

import contextlib
import io
import os
import subprocess
import time
import traceback

import pytest

from tests.support.docs import READING_ORDER, ROOT, commands, examples, lenient_parser, zoo_command

# Shell commands a page may run to make or show a file (in a subprocess); anything else is a zoo command.
SHELL = {"cat", "echo", "printf", "ls", "mkdir", "head", "cp"}
CAP_TRAIN, CAP_EVAL = 32, 32  # pairs of a shrunk run


def test_every_page_is_in_the_reading_order():
    pages = {"README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))}
    assert pages == set(READING_ORDER), "add the page to tests/support/docs.py's READING_ORDER"


def test_the_examples_are_counted():
    blocks = [block for page in READING_ORDER for block in examples(page)]
    ran = [block for block in blocks if not block.check_only]
    checked = [block for block in blocks if block.check_only]
    print(f"\n{len(blocks)} examples: {len(ran)} run, {len(checked)} checked only")
    assert len(ran) >= 20 and len(checked) >= 10, (len(ran), len(checked))
    assert all(len(block.check_only) > 10 for block in checked), "say why a block is not run"
    readme = examples("README.md")
    assert readme[0].check_only and not readme[1].check_only, "README: the set-up is marked, the first run runs"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The folder every page's examples run in, one after another (the reader's working directory)."""
    return tmp_path_factory.mktemp("reader")


@pytest.fixture(scope="module")
def shrunk_runs():
    """Every run the examples train is cut to a few dozen pairs and one epoch, without images: a shim on
    `RunConfig.create`, through which train, sweep and reproduce build their runs."""
    from zoo.training.config import RunConfig

    original = RunConfig.create.__func__
    patch = pytest.MonkeyPatch()

    def create(cls, model, overrides=None, epochs=None, batch_size=None, embeddings=None, **options):
        for key, cap in (("max_train_examples", CAP_TRAIN), ("max_eval_examples", CAP_EVAL)):
            options[key] = min(options.get(key) or cap, cap)
        options.update(images_every=0, attention_examples=0)
        return original(cls, model, overrides, 1, batch_size, embeddings, **options)

    patch.setattr(RunConfig, "create", classmethod(create))
    yield
    patch.undo()


def run_zoo(command, arguments):
    """Runs one zoo command line in this process; returns its exit status."""
    import importlib

    module = importlib.import_module(f"zoo.commands.{command}")
    try:
        if command in ("train", "evaluate", "predict", "export"):
            module.main(arguments, prog=f"{command}.py")
        else:
            module.main(arguments, prog=f"nli-zoo {command}")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return 0


def run_bash(block, folder):
    """Runs a bash block command by command; returns the first failure, or None."""
    for environment, argv, source in commands(block.text):
        line = " ".join(argv)
        zoo = zoo_command(argv)
        if zoo is not None:
            saved = {name: os.environ.get(name) for name in environment}
            os.environ.update(environment)
            try:
                status = run_zoo(*zoo)
            except Exception:  # the failure's traceback is the report
                return f"{line}: {traceback.format_exc(limit=-3)}"
            finally:
                for name, value in saved.items():
                    os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
            if status != 0:
                return f"{line}: exit status {status}"
        elif argv[0] in SHELL:
            done = subprocess.run(["bash", "-c", source], cwd=folder, capture_output=True, text=True,
                                  env={**os.environ, **environment})
            if done.returncode:
                return f"{line}: exit status {done.returncode}: {done.stderr.strip()}"
        else:
            return f"{line}: not a command the examples can run here (mark the block check-only, with why)"
    return None


def check_bash(block):
    """The block's syntax, and the flags of every zoo command in it; returns the first failure, or None."""
    done = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
    if done.returncode:
        return f"bash -n: {done.stderr.strip()}"
    for _, argv, _ in commands(block.text):
        zoo = zoo_command(argv)
        if zoo is not None and not any("..." in word for word in zoo[1]):
            try:
                lenient_parser(zoo[0]).parse_args(zoo[1])
            except SystemExit:
                return f"{' '.join(argv)}: the parser refuses it"
        elif len(argv) > 1 and argv[0] == "python" and argv[1].startswith("scripts/"):
            if not (ROOT / argv[1]).is_file():
                return f"{argv[1]}: no such script"
    return None


@pytest.mark.large
@pytest.mark.parametrize("page", READING_ORDER)
def test_examples_run_as_pasted(page, scratch, shrunk_runs, monkeypatch):
    monkeypatch.chdir(scratch)
    namespace = {"__name__": "__docs__"}  # the page's Python blocks share one session
    for block in examples(page):
        started = time.process_time()
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            if block.language == "bash":
                failure = check_bash(block) if block.check_only else run_bash(block, scratch)
            else:
                try:
                    code = compile(block.text, str(block), "exec")
                    if not block.check_only:
                        exec(code, namespace)
                    failure = None
                except Exception:  # the failure's traceback is the report
                    failure = traceback.format_exc(limit=-3)
        assert failure is None, f"{block}: {failure}\n{output.getvalue()[-3000:]}"
        print(f"{block}: {'checked' if block.check_only else 'ran'}, {time.process_time() - started:.1f} s of CPU")
