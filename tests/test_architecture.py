"""The package's floors: a lower layer never imports a higher one, and no modules import each other in a
circle. Read from the source (every import, those inside functions included), so nothing is run."""

import ast
import re
from pathlib import Path

import pytest

ZOO = Path(__file__).resolve().parent.parent / "zoo"

# From the ground up. A module may import the floors below its own, and its own package; the packages of
# one floor do not import each other (training and export, for instance, both stand on runs), except the
# registry, its catalog and the model files, which register themselves in it (one unit).
UNITS = [{"zoo.models", "zoo.registry", "zoo.catalog"}]
FLOORS = [
    {"zoo.constants", "zoo.errors", "zoo.fileio", "zoo.quiet"},
    {"zoo.settings"},
    {"zoo.layers"},
    {"zoo.models", "zoo.registry", "zoo.catalog"},
    {"zoo.data", "zoo.plotting"},
    {"zoo.runs"},
    {"zoo.export", "zoo.training", "zoo.presets"},
    {"zoo.predictors"},
    {"zoo.diagnostics", "zoo.demo"},
    {"zoo.comparison", "zoo.inference"},
    {"zoo.reproduction"},
    {"zoo.commands"},
    {"zoo.measurements"},
]


def module_name(path):
    parts = list(path.relative_to(ZOO.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path, top_level_only=False):
    """The `zoo` modules a file imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("zoo")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("zoo"):
            for alias in node.names:  # `from zoo.runs import layout` imports the module zoo.runs.layout
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if module_path(candidate) else node.module)
    return found


def module_path(name):
    base = ZOO.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def floor_of(name):
    for index, packages in enumerate(FLOORS):
        if any(name == p or name.startswith(p + ".") for p in packages):
            return index, next(p for p in packages if name == p or name.startswith(p + "."))
    return None, None


MODULES = {module_name(path): path for path in ZOO.rglob("*.py")}


def test_every_module_has_a_floor():
    assert [name for name in MODULES if name != "zoo" and floor_of(name)[0] is None] == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n != "zoo"))
def test_no_module_imports_a_higher_floor_or_a_neighbour(name):
    floor, package = floor_of(name)
    for target in sorted(imports(MODULES[name])):
        if target == "zoo":  # the facade (zoo/__init__.py): only the command lines and scripts use it
            raise AssertionError(f"{name} imports the package facade `zoo`; import the module that defines "
                                 "the name instead")
        target_floor, target_package = floor_of(target)
        assert target_floor is not None, f"{name} imports {target}, which has no floor"
        same_unit = target_package == package or any({package, target_package} <= unit for unit in UNITS)
        assert target_floor < floor or same_unit, \
            f"{name} (floor {floor}) imports {target} (floor {target_floor})"


def import_circles(top_level_only):
    """The import circles among the modules of `zoo` (each as `[a, b, ..., a]`)."""
    graph = {name: {t for t in imports(path, top_level_only=top_level_only) if t in MODULES}
             for name, path in MODULES.items()}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_no_import_circle_at_module_level():
    assert import_circles(top_level_only=True) == []


def test_no_import_circle_counting_imports_inside_functions():
    # A module that imports another inside a function, while that one imports it back, is a circle too: it
    # only works because of when the functions run.
    assert import_circles(top_level_only=False) == []


MAX_MODULE_LINES = 450


def test_no_module_is_longer_than_450_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: split them along their ideas"


def print_calls(source):
    """The lines of `source` that call the builtin `print` (a method or attribute named print, such as
    `tf.print` in a served graph, and `print(` in a docstring's example are not calls of it)."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]


def test_the_library_below_the_commands_speaks_through_logging_not_print():
    printing = {name: lines for name, path in MODULES.items()
                if not (name == "zoo.commands" or name.startswith("zoo.commands."))
                and (lines := print_calls(path.read_text(encoding="utf-8")))}
    assert printing == {}, "modules below zoo.commands that print: use logging.getLogger(__name__) (lines listed)"


def test_the_commands_speak_through_the_message_handler_only():
    # one voice: a command's output, its notes and its errors all go through zoo.commands.messages
    printing = {name: lines for name, path in MODULES.items()
                if name.startswith("zoo.commands.") and name != "zoo.commands.messages"
                and (lines := print_calls(path.read_text(encoding="utf-8")))}
    assert printing == {} and print_calls(MODULES["zoo.commands"].read_text(encoding="utf-8")) == [], \
        "command modules that print: use zoo.commands.messages (output, a logger, parsing.fail)"


def written_errors(source):
    """The lines of `source` whose strings (docstrings aside) write `error: ` themselves."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and "error: " in node.value and id(node) not in docstrings]


def test_the_commands_write_their_errors_through_fail():
    by_hand = {name: lines for name, path in MODULES.items()
               if (name == "zoo.commands" or name.startswith("zoo.commands.")) and name != "zoo.commands.parsing"
               and (lines := written_errors(path.read_text(encoding="utf-8")))}
    assert by_hand == {}, "`PROG: error: ...` written by hand: call zoo.commands.parsing.fail"


LOG_CALLS = ("debug", "info", "warning", "error", "exception", "critical")


def prefixed_log_calls(source):
    """The lines of `source` whose logger calls write a `[prefix] ` into their message's text."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_CALLS
                and node.args):
            continue
        first = node.args[0]
        if isinstance(first, ast.JoinedStr):
            first = first.values[0] if first.values else None
        elif isinstance(first, ast.BinOp):  # "[data] using " + ...
            first = first.left
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and re.match(r"\[[\w-]+\] ", first.value):
            found.append(node.lineno)
    return found


def test_a_messages_prefix_is_its_loggers_not_its_text():
    prefixed = {name: lines for name, path in MODULES.items()
                if (lines := prefixed_log_calls(path.read_text(encoding="utf-8")))}
    assert prefixed == {}, "messages that write their [prefix]: zoo.commands.messages.PREFIXES maps the logger to it"


def test_the_prefix_checks_see_every_form():
    assert prefixed_log_calls('logger.info(f"[train] {x}")\nlog.warning("[data] using " + y)\n') == [1, 2]
    assert prefixed_log_calls('logger.info(f"{x} [train]")\nlogger.info("[3, 4] items")\n') == []
    assert written_errors('"""PROG: error: ..."""\nx = f"{prog}: error: {e}"\n') == [2]


def test_the_print_check_sees_every_form():
    assert print_calls("print('a')\nx = [print(i, end='') for i in y]\n") == [1, 2]
    assert print_calls('"""print(x)"""\ntf.print(x)\nlogger.info("print(x)")\n') == []


def test_export_and_runs_do_not_import_training():
    for name, path in MODULES.items():
        if name.startswith(("zoo.export", "zoo.runs", "zoo.presets")):
            assert not {t for t in imports(path) if t.startswith("zoo.training")}, name


def imports_package(path, package, top_level_only=True):
    """Whether a file imports `package` (or a module of it) at module level (or, with `top_level_only=False`,
    anywhere)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in (tree.body if top_level_only else ast.walk(tree)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(n == package or n.startswith(package + ".") for n in names):
            return True
    return False


def imports_tensorflow(path, top_level_only=True):
    """Whether a file imports TensorFlow at module level (or, with `top_level_only=False`, anywhere)."""
    return imports_package(path, "tensorflow", top_level_only)


def test_argparse_stays_in_the_commands():
    """Flags, their argparse types and Namespaces belong to `zoo/commands/`; the library below takes values."""
    importing = sorted(name for name, path in MODULES.items()
                       if not name.startswith("zoo.commands") and imports_package(path, "argparse", False))
    assert importing == [], "argparse outside zoo/commands: move the adapter to zoo/commands/parsing.py"


# The data floor's TensorFlow-free half (docs/architecture.md): a loader, the vocabulary, word vectors, the
# tree layout and the length grid can be used, and tested, without TensorFlow's import.
WITHOUT_TENSORFLOW = ("zoo.data.corpora", "zoo.data.snli", "zoo.data.readers", "zoo.data.vocab", "zoo.data.embeddings",
                      "zoo.data.vectors", "zoo.data.trees", "zoo.data.batching")


@pytest.mark.parametrize("name", WITHOUT_TENSORFLOW)
def test_the_data_floor_loads_without_tensorflow(name):
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        assert not imports_tensorflow(MODULES[current]), f"{name} imports TensorFlow through {current}"
        parents = [current.rsplit(".", k)[0] for k in range(1, current.count("."))]  # run first, by Python
        todo += [t for t in imports(MODULES[current], top_level_only=True) if t in MODULES] + parents


def test_models_and_layers_are_keras_ops_but_for_tensorflows_own_lstm_kernel():
    """Model and layer code runs on any Keras backend: only the one module of TensorFlow's LSTM kernel (the
    "block" loop, chosen under TensorFlow alone) imports TensorFlow."""
    importing = sorted(name for name, path in MODULES.items()
                       if name.startswith(("zoo.layers", "zoo.models"))
                       and imports_tensorflow(path, top_level_only=False))
    assert importing == ["zoo.layers.tensorflow_lstm"]


ARCHITECTURE = ZOO.parent / "docs" / "architecture.md"


def test_the_floors_of_docs_architecture_are_the_floors_checked_here():
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.M)
    documented = {}
    for floor, paths in rows:
        for path in re.findall(r"`zoo/([\w/]+?)(?:\.py|/)?`", paths):
            documented["zoo." + path.replace("/", ".")] = int(floor)
    assert documented == {package: floor for floor, packages in enumerate(FLOORS) for package in packages}


def test_every_path_docs_architecture_names_exists():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for path in set(re.findall(r"`((?:zoo|tests|scripts|docs)/[\w/.]*\w)`", text)):
        assert (ZOO.parent / path).exists(), f"docs/architecture.md names {path}, which does not exist"


# The tests' own floors: shared helpers live in tests/support/ (plain functions) and tests/conftest.py
# (fixtures); a test module never imports another, and the harness never imports a test module.
TESTS = ZOO.parent / "tests"


def is_test_module(name):
    """Whether a dotted import names a test module or something in one: `tests.test_x(.y)`, or a bare
    `test_x(.y)` (imported with tests/ on sys.path)."""
    parts = name.split(".")
    return parts[0].startswith("test_") or (parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:]))


def imported_test_modules(source, package="tests"):
    """The test modules that Python source imports, in any form (`import tests.test_x`, `from tests import
    test_x`, `from tests.test_x import y`, `from test_x import y`, relative ones from `package`), including in
    the scripts that tests pass to a subprocess as string constants (strings with a line that imports)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if is_test_module(alias.name)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(filter(None, [package.rsplit(".", node.level - 1)[0], base]))
            names = [base] if is_test_module(base) else \
                [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
            found |= {name for name in names if is_test_module(name)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.search(r"^(import|from) \w", node.value, flags=re.M):
            try:
                found |= imported_test_modules(node.value, package)
            except SyntaxError:  # text, not a script
                pass
    return found


def test_the_import_check_sees_every_form():
    # Each form built at run time, so that this file's own source imports no test module.
    forms = [f"{statement} {module}" for statement, module in [
        ("import", "tests.test_train"), ("from", "tests.test_train import ROOT"), ("from", "tests import test_case"),
        ("from", ".test_train import ROOT"), ("from", ". import test_train"), ("import", "test_recurrent"),
        ("from", "test_recurrent import make_layer")]]
    forms.append(f"SCRIPT = {chr(10).join(['import zoo', forms[1]])!r}")  # a subprocess's script
    assert [form for form in forms if not imported_test_modules(form)] == []
    allowed = ["from tests.support import models", "from tests.support.runs import tiny_args", "import zoo",
               "from . import support", "from zoo.export.tflite import test_examples_of",
               'TEXT = "the test_x module"']
    assert [form for form in allowed if imported_test_modules(form)] == []


def test_no_test_module_or_helper_imports_a_test_module():
    files = sorted(TESTS.rglob("*.py"))
    assert TESTS / "support" / "runs.py" in files and TESTS / "conftest.py" in files
    found = {}
    for path in files:
        package = ".".join(path.relative_to(ZOO.parent).parent.parts)
        if imported := imported_test_modules(path.read_text(encoding="utf-8"), package):
            found[str(path.relative_to(ZOO.parent))] = sorted(imported)
    assert found == {}, "shared test helpers belong in tests/support/, shared fixtures in tests/conftest.py"


# scripts/ under the same rules: the size cap, the installed `zoo` imported (no `sys.path` edits: a script
# run as `python scripts/x.py` sees its siblings and the installed package), one child-result protocol.
SCRIPTS = ZOO.parent / "scripts"


def edits_sys_path(tree):
    """Whether a module touches `sys.path` (`sys.path.insert(...)`, `sys.path = ...`, `sys.path[:0] = ...`)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
               and node.value.id == "sys" for node in ast.walk(tree))


def test_scripts_keep_the_size_cap_import_the_installed_zoo_and_share_one_child_protocol():
    files = sorted(SCRIPTS.rglob("*.py"))
    assert SCRIPTS / "benchmark_serving.py" in files and SCRIPTS / "reference" / "esim_torch_serving.py" in files
    long, editing, markers = {}, [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ZOO.parent))
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            long[name] = n
        if edits_sys_path(ast.parse(text)):
            editing.append(name)
        if re.search(r"^\w*MARK\w* = ", text, flags=re.M):  # a marker of its own beside zoo.measurements.child's
            markers.append(name)
    assert long == {}, f"scripts over {MAX_MODULE_LINES} lines: split them along their ideas"
    assert editing == [], "scripts import the installed zoo and their siblings; the reference's checkout goes on " \
                          "the child's PYTHONPATH"
    assert markers == [], "a measuring child prints its result with zoo.measurements.child.emit"


def test_the_sys_path_check_sees_every_form():
    forms = ["import sys\nsys.path.insert(0, 'x')", "import sys\nsys.path = ['x']", "import sys\nsys.path[:0] = ['x']",
             "import sys\nsys.path.append('x')"]
    assert all(edits_sys_path(ast.parse(form)) for form in forms)
    assert not edits_sys_path(ast.parse("import os\nos.path.join('a', 'b')"))
