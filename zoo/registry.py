"""Model registry: names from the papers mapped to model classes and their published presets.

Example:
```python
import zoo
zoo.list_models("rocktaschel*")
model = zoo.create_model("rocktaschel_wbw", vocabulary_size=1000, embedding_dim=50)
zoo.get_preset("rocktaschel_wbw").train.learning_rate
```
Names, presets and specs are answered from the model files' source (`zoo.catalog`, which reads their
`@register_model(...)` decorators) without importing the files, which import Keras; `create_model` and a
spec's `model_class` import them. Models registered from elsewhere (a user's own file, once imported) are
listed with them.
"""

import copy
import dataclasses
import fnmatch
import functools

from zoo.catalog import read_catalog
from zoo.constants import EMBEDDING_DIM
from zoo.layers.serializable import KERAS_PACKAGE, serializable  # noqa: F401 (re-exported)
from zoo.quiet import import_backend
from zoo.settings import DataSettings, RunSettings, TrainSettings, tunable_words_for

_REGISTRY = {}

# What every preset starts from, and a model's registration overrides where its paper says otherwise: the
# one default of each setting, `zoo.settings.TrainSettings` / `DataSettings` (here as preset dicts).
DEFAULT_TRAIN = TrainSettings().to_json()
DEFAULT_DATA = DataSettings().to_json()


class ModelSpec:
    """One registered name: its class, preset sections and the paper figures it is checked against.

    A spec read from the model files' source (`zoo.catalog`) knows its class by name only; `model_class`
    imports the model files on first use."""

    def __init__(self, name, model_class, model, train, data, paper, paper_params, attention, class_name=None):
        self.name = name
        self.attention = tuple(attention)
        self._model_class = model_class
        self.class_name = class_name or model_class.__name__
        # checked and written back whole: a registration's slip fails at import, and every preset has every key
        self.settings = RunSettings.of({"model": dict(model), "train": {**DEFAULT_TRAIN, **train},
                                        "data": {**DEFAULT_DATA, **data}})
        self.preset = self.settings.to_json()
        self.paper = paper
        self.paper_params = paper_params

    @property
    def model_class(self):
        """The model's class (importing the model files where the spec was read from their source)."""
        if self._model_class is None:
            _import_models()
            self._model_class = _REGISTRY[self.name].model_class
        return self._model_class


def register_model(name, *, model=None, train=None, data=None, paper="", paper_params=None, attention=()):
    """Class decorator registering `name` with its paper preset (may be stacked for several names).

    The class is also registered with Keras' serialization (`serializable`), so that `model.save("x.keras")`
    and `keras.models.load_model("x.keras")` work for every registered model.

    The model files' registrations are also read from their source (`zoo.catalog`), so that names and presets
    are known without importing Keras: write the arguments as literals, the file's constants, constants of
    another model file or a one-`return` function of the file (anything else makes the registry import the
    model files to list them).

    Args:
        name: registry name, e.g. `"rocktaschel_wbw"`.
        model: constructor keyword arguments of the preset: every architecture setting of the class, which
            gives them no default (`create_model` passes them).
        train: training settings overriding `DEFAULT_TRAIN`.
        data: data settings overriding `DEFAULT_DATA`.
        paper: where the preset comes from (paper, table, section).
        paper_params: the paper's parameter count without word vectors (|θ|_M), if it gives one.
        attention: the attention maps `explain()` returns (e.g. `("attention", "attention_reverse")`).
    """

    def decorator(cls):
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} is registered twice")
        _REGISTRY[name] = ModelSpec(name, cls, model or {}, train or {}, data or {}, paper, paper_params,
                                    attention)
        return serializable(cls)

    return decorator


@functools.lru_cache(maxsize=None)
def _catalog():
    """`{name: ModelSpec}` of the model files read from source, or None where a file could not be read (then
    the files are imported instead)."""
    entries, unreadable = read_catalog()
    if unreadable:
        return None
    return {name: ModelSpec(name, None, e.arguments.get("model") or {}, e.arguments.get("train") or {},
                            e.arguments.get("data") or {}, e.arguments.get("paper", ""),
                            e.arguments.get("paper_params"), e.arguments.get("attention", ()),
                            class_name=e.class_name)
            for name, e in entries.items()}


def _known():
    """Every known spec by name: the imported registrations, and the model files' read from source."""
    catalog = _catalog()
    if catalog is None:
        _import_models()
        catalog = {}
    return {**catalog, **_REGISTRY}


def _spec(name):
    known = _known()
    if name not in known:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(known))}")
    return known[name]


def _import_models():
    # Importing the package registers every model file. Here, not at the head: the models import keras
    # (about 6 s with its backend), and `import zoo` (which imports this module) should not. TensorFlow first,
    # through `zoo.quiet`, so that its start-up lines are filtered.
    import_backend()
    import zoo.models  # noqa: F401


def list_models(pattern="*"):
    """Sorted registered names matching a shell-style `pattern` (no model file is imported)."""
    return sorted(n for n in _known() if fnmatch.fnmatch(n, pattern))


def get_spec(name):
    """The `ModelSpec` of a registered name."""
    return _spec(name)


def get_preset(name):
    """The paper preset of `name`, typed (`zoo.settings.RunSettings`: `.model` the constructor arguments, a
    copy; `.train`, `.data`); `.to_json()` is the `{"model", "train", "data"}` dict, `.with_overrides({...})`
    applies `--set` settings."""
    settings = _spec(name).settings
    return dataclasses.replace(settings, model=copy.deepcopy(settings.model))


def create_model(name, vocabulary_size, embedding_dim=EMBEDDING_DIM, tunable_words=None, num_tunable=0,
                 build=True, **overrides):
    """Builds the registered model `name` with its paper preset and `overrides` of model settings.

    The preset is the one place a model's architecture settings are given: the classes take them as required
    keyword arguments, without defaults (a class built directly takes them all, as
    `ESIM(vocabulary_size=..., **get_preset("esim").model)`).

    Args:
        name: a name from `list_models()`.
        vocabulary_size: number of token ids.
        embedding_dim: word vector size (the papers': `zoo.constants.EMBEDDING_DIM`).
        tunable_words: `"all"`, `"none"` or `"oov"`; defaults to the paper's choice for the preset's OOV strategy.
        num_tunable: with `"oov"`, the number of tunable rows.
        build: call the model once on a tiny batch so that its weights exist.
        **overrides: constructor arguments replacing the preset's.
    """
    spec = _spec(name)
    kwargs = dict(spec.settings.model)
    unknown = set(overrides) - set(kwargs) - {"num_classes", "name"}
    if unknown:
        raise ValueError(f"unknown argument(s) {sorted(unknown)} for model {name!r}; "
                         f"its settings: {', '.join(sorted(kwargs))}")
    kwargs.update(overrides)
    if tunable_words is None:
        tunable_words = tunable_words_for(spec.settings.data.oov)
    model = spec.model_class(vocabulary_size=vocabulary_size, embedding_dim=embedding_dim,
                             tunable_words=tunable_words, num_tunable=num_tunable, **kwargs)
    if build:
        model.build_with_dummy_batch()
    return model
