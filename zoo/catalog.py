"""The registered models' names and presets read from the model files' source, without importing them.

Each model file of `zoo/models/` holds its model's whole definition: the class and, in its
`@register_model("name", model=..., train=..., data=..., paper=..., paper_params=..., attention=...)`
decorators, the names it registers and their paper presets. Importing a model file imports Keras (seconds),
which a command that only needs a name or a preset (`nli-zoo models`, a typo in `train.py --model`, a
`--set` key) should not pay. This module reads those decorator calls with `ast`: the same text Python runs,
evaluated here over the few kinds of expression the presets are written in (literals, dicts with `**`, the
file's module-level constants, constants imported from another model file, and module-level functions whose
body is one `return`). The registry (`zoo.registry`) answers from this catalog until a model class is
needed; a test checks that the catalog equals the registry the imported files fill in.

A file this reader cannot follow (a registration outside a class decorator, a preset computed by code it
does not evaluate) is reported as unreadable: the registry then imports the model files, as before, so a
model is never missing, only slower to list.

Example:
```python
from zoo.catalog import read_catalog
entries, unreadable = read_catalog()
entries["esim"].arguments["train"]["learning_rate"], entries["esim"].class_name     # 0.0004, 'ESIM'
```
"""

import ast
import dataclasses
import functools
import os

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
MODELS_PACKAGE = "zoo.models"
_DECORATOR = "register_model"


class Unreadable(Exception):
    """A model file whose registrations cannot be read from its source (the message says where)."""


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One `@register_model(...)` call read from source.

    Attributes:
        name: the registered name.
        class_name: the decorated class; module: the model file's module (`zoo.models.esim`).
        arguments: the decorator's keyword arguments, evaluated (`model`, `train`, `data`, `paper`,
            `paper_params`, `attention`; absent ones are left out).
    """

    name: str
    class_name: str
    module: str
    arguments: dict


class _Module:
    """One model file's module-level names, evaluated on demand (constants, one-`return` functions, imports
    from other model files)."""

    def __init__(self, reader, module, tree):
        self.reader, self.module, self.path = reader, module, getattr(tree, "path", module)
        self.assigned, self.functions, self.imported, self.values = {}, {}, {}, {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigned[node.targets[0].id] = node.value
            elif isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MODELS_PACKAGE + "."):
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module, alias.name)

    def name(self, name, scope, line):
        if name in scope:
            return scope[name]
        if name not in self.values:
            if name in self.assigned:
                self.values[name] = self.evaluate(self.assigned[name], {})
            elif name in self.imported:
                module, original = self.imported[name]
                self.values[name] = self.reader.module(module).name(original, {}, line)
            else:
                raise Unreadable(f"{self.module} line {line}: {name!r} is not a constant of a model file")
        return self.values[name]

    def call(self, node, scope):
        if not isinstance(node.func, ast.Name) or node.func.id not in self.functions:
            raise Unreadable(f"{self.module} line {node.lineno}: a call this reader does not evaluate")
        function = self.functions[node.func.id]
        body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        arguments = function.args
        if len(body) != 1 or not isinstance(body[0], ast.Return) or arguments.vararg or arguments.kwarg \
                or arguments.defaults or arguments.kwonlyargs or arguments.posonlyargs:
            raise Unreadable(f"{self.module} line {function.lineno}: {function.name}() is not one `return` "
                             "of its positional arguments")
        names = [a.arg for a in arguments.args]
        given = [self.evaluate(a, scope) for a in node.args]
        given_by_name = {k.arg: self.evaluate(k.value, scope) for k in node.keywords if k.arg}
        if len(given) + len(given_by_name) != len(names) or set(given_by_name) - set(names[len(given):]):
            raise Unreadable(f"{self.module} line {node.lineno}: {function.name}() called with other arguments")
        return self.evaluate(body[0].value, {**dict(zip(names, given)), **given_by_name})

    def evaluate(self, node, scope):
        """The value of an expression node (literals, containers, names, `**` in dicts, calls, unary minus)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id, scope, node.lineno)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.evaluate(e, scope) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            value = {}
            for key, item in zip(node.keys, node.values):
                if key is None:  # {**OTHER, ...}
                    value.update(self.evaluate(item, scope))
                else:
                    value[self.evaluate(key, scope)] = self.evaluate(item, scope)
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.evaluate(node.operand, scope)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        raise Unreadable(f"{self.module} line {getattr(node, 'lineno', '?')}: an expression this reader does not "
                         f"evaluate ({type(node).__name__})")

    def registrations(self):
        """The file's `CatalogEntry`s, in source order."""
        tree, entries, read = self.reader.trees[self.module], [], set()
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Name) \
                        and decorator.func.id == _DECORATOR:
                    read.add(id(decorator.func))
                    entries.append(self.entry(node, decorator))
        for node in ast.walk(tree):  # any other use of register_model is code this reader does not follow
            if isinstance(node, ast.Name) and node.id == _DECORATOR and id(node) not in read:
                raise Unreadable(f"{self.module} line {node.lineno}: register_model used outside a class decorator")
        return entries

    def entry(self, cls, decorator):
        if len(decorator.args) != 1 or any(k.arg is None for k in decorator.keywords):
            raise Unreadable(f"{self.module} line {decorator.lineno}: register_model wants the name and keywords")
        name = self.evaluate(decorator.args[0], {})
        arguments = {k.arg: self.evaluate(k.value, {}) for k in decorator.keywords}
        return CatalogEntry(name=name, class_name=cls.name, module=self.module, arguments=arguments)


class _Reader:
    def __init__(self, directory):
        self.directory, self.trees, self.modules = directory, {}, {}

    def module(self, module):
        if module not in self.modules:
            path = os.path.join(self.directory, module[len(MODELS_PACKAGE) + 1:].replace(".", os.sep) + ".py")
            try:
                with open(path, encoding="utf-8") as file:
                    self.trees[module] = ast.parse(file.read(), filename=path)
            except (OSError, SyntaxError, ValueError) as error:
                raise Unreadable(f"{module}: {error}") from None
            self.modules[module] = _Module(self, module, self.trees[module])
        return self.modules[module]


def model_files(directory=MODELS_DIR):
    """The model files' module names (`zoo.models.esim`, ...), as `zoo.models` imports them."""
    return [f"{MODELS_PACKAGE}.{name[:-3]}" for name in sorted(os.listdir(directory))
            if name.endswith(".py") and not name.startswith("_")]


@functools.lru_cache(maxsize=None)
def read_catalog(directory=MODELS_DIR):
    """Every registration of the model files in `directory`, read from their source.

    Returns:
        `(entries, unreadable)`: `{name: CatalogEntry}`, and `[message]` for the files that could not be
        read (their models are missing from `entries`; the registry imports the files instead).
    """
    reader, entries, unreadable = _Reader(directory), {}, []
    for module in model_files(directory):
        try:
            found = reader.module(module).registrations()
        except (Unreadable, RecursionError) as error:
            unreadable.append(str(error))
            continue
        for entry in found:
            if entry.name in entries:
                unreadable.append(f"{module}: model {entry.name!r} is registered twice")
            entries[entry.name] = entry
    return entries, unreadable
