"""A paper preset's sections, typed: `TrainSettings`, `DataSettings` and `RunSettings(model, train, data)`.

A paper preset (`zoo.get_preset(name)`: the hyperparameters a paper gives, which `--set` overrides) holds
three sections: `model` (the model's constructor keyword arguments, Keras-style: they stay a dict), `train`
and `data`. The last two are typed here and checked once, naming the setting in a one-line `ConfigError`.

**Every default lives here, once**: a field's default is the value every preset starts from
(`zoo.registry` builds `DEFAULT_TRAIN` / `DEFAULT_DATA` from these classes, the preset task's `compile()`
reads `TrainSettings`, docs/training.md's table is checked against them by tests/test_settings.py), and
`to_json()` writes the sections back in the format of `config.json` and `zoo.get_preset`.

(Not to be confused with a *preset folder*, a saved classifier of `export.py --format preset` and
`zoo.from_preset`, which `zoo.presets` handles.)

```python
from zoo.settings import RunSettings
settings = RunSettings.of(zoo.get_preset("esim"))
settings.train.learning_rate, settings.train.lr_decay.kind, settings.data.max_premise_length
```
"""

import dataclasses
from typing import Optional

from zoo.errors import ConfigError
from zoo.settings import values

# The optimizers `keras.optimizers.get` knows by name (checked before anything is written to a run).
OPTIMIZERS = ("adadelta", "adafactor", "adagrad", "adam", "adamax", "adamw", "ftrl", "lamb", "lion", "nadam",
              "rmsprop", "sgd")
DECAY_KINDS = ("exponential", "step", "halve_on_plateau")
# The papers' rules for words without a pretrained vector (`zoo.data.embeddings`), and which word vectors
# train under each: "oov" the words without one, "all" or "none".
TUNABLE_WORDS = {"rocktaschel": "oov", "chen": "all", "luo": "all", "wang_jiang": "none", "paria": "none",
                 "bowman": "all"}
OOV_RULES = tuple(TUNABLE_WORDS)


# Model settings (constructor arguments) that several models share, checked by kind.
MODEL_CHECKS = {"hidden_size": values.count, "mlp_layers": values.count, "operator_size": values.count,
                "dropout": values.fraction}


def tunable_words_for(oov_rule):
    """Which word vectors train under a paper's OOV rule: `"oov"`, `"all"` or `"none"`."""
    return TUNABLE_WORDS[values.choice(oov_rule, "oov", OOV_RULES)]


@dataclasses.dataclass(frozen=True)
class LearningRateDecay:
    """The `lr_decay` setting: per-epoch decay or Chen et al.'s halve-on-plateau.

    Attributes:
        kind: `"exponential"` or `"step"` (both `lr * rate ** (epoch // every_epochs)`), or
            `"halve_on_plateau"` (`zoo.training.callbacks.HalveOnPlateau`).
        rate, every_epochs: the per-epoch decay.
        factor, wait: the plateau schedule's multiplier and epochs without improvement before each halving.
    """

    kind: str = "exponential"
    rate: Optional[float] = None
    every_epochs: int = 1
    factor: float = 0.5
    wait: int = 1

    @classmethod
    def of(cls, value):
        """The decay of an `lr_decay` setting: None, a number (exponential rate per epoch), a dict
        (`{"type": ..., ...}`) or a `LearningRateDecay`.

        Raises:
            ConfigError: an unknown type or key, or a value out of range (the message names it).
        """
        if value is None or isinstance(value, cls):
            return value
        if values.is_number(value):
            value = {"type": "exponential", "rate": value}
        if not isinstance(value, dict):
            raise ConfigError(f"lr_decay must be null, a number or an object with a \"type\", got {value!r}")
        kind = values.choice(value.get("type", "exponential"), "lr_decay type", DECAY_KINDS)
        keys = {"type", "factor", "wait"} if kind == "halve_on_plateau" else {"type", "rate", "every_epochs"}
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ConfigError(f"lr_decay of type {kind!r} has no setting {unknown[0]!r}; its settings: "
                              f"{', '.join(sorted(keys))}")
        if kind == "halve_on_plateau":
            return cls(kind=kind, factor=float(values.number(value.get("factor", cls.factor), "lr_decay factor")),
                       wait=values.count(value.get("wait", cls.wait), "lr_decay wait"))
        if "rate" not in value:
            raise ConfigError(f"lr_decay of type {kind!r} needs a \"rate\" (the factor per step)")
        return cls(kind=kind, rate=float(values.number(value["rate"], "lr_decay rate")),
                   every_epochs=values.count(value.get("every_epochs", cls.every_epochs), "lr_decay every_epochs"))

    @property
    def on_plateau(self):
        """Whether the schedule is Chen et al.'s halve-on-plateau."""
        return self.kind == "halve_on_plateau"

    def to_json(self):
        """The setting as a preset writes it (`{"type": ..., ...}`)."""
        if self.on_plateau:
            return {"type": self.kind, "factor": self.factor, "wait": self.wait}
        return {"type": self.kind, "rate": self.rate, "every_epochs": self.every_epochs}


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """The preset's `train` section, typed; each field's default is the one every preset starts from."""

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-8   # Adam's epsilon in Theano/Lasagne, Torch and TF 1, which the papers used (Keras: 1e-7)
    batch_size: int = 32
    global_clipnorm: Optional[float] = None
    epochs: int = 20
    patience: Optional[int] = 3
    lr_decay: Optional[LearningRateDecay] = None
    l2: float = 0.0

    @classmethod
    def of(cls, section):
        """The settings of a preset's `train` section (a dict; missing keys take the defaults), or `section`
        itself when already typed.

        Raises:
            ConfigError: an unknown key, or the first value that cannot be right (named).
        """
        if isinstance(section, cls):
            return section
        s = _known(section, "train", cls)
        optimizer = s.get("optimizer", cls.optimizer)
        optimizer = values.choice(optimizer.lower() if isinstance(optimizer, str) else optimizer, "optimizer",
                                  OPTIMIZERS)
        clipnorm = s.get("global_clipnorm", cls.global_clipnorm)
        patience = s.get("patience", cls.patience)
        return cls(
            optimizer=optimizer,
            learning_rate=float(values.number(s.get("learning_rate", cls.learning_rate), "learning_rate", zero=True)),
            beta_1=values.fraction(s.get("beta_1", cls.beta_1), "beta_1"),
            beta_2=values.fraction(s.get("beta_2", cls.beta_2), "beta_2"),
            epsilon=values.number(s.get("epsilon", cls.epsilon), "epsilon"),
            batch_size=values.batch_size(s.get("batch_size", cls.batch_size), "batch_size"),
            global_clipnorm=None if clipnorm is None else values.number(clipnorm, "global_clipnorm"),
            epochs=values.count(s.get("epochs", cls.epochs), "epochs"),
            patience=None if patience is None else values.count(patience, "patience", zero=True),
            lr_decay=LearningRateDecay.of(s.get("lr_decay", cls.lr_decay)),
            l2=0.0 if s.get("l2") is None else float(values.number(s["l2"], "l2", zero=True)))

    def to_json(self):
        """The section as a preset and `config.json` write it."""
        section = dataclasses.asdict(self)
        section["lr_decay"] = None if self.lr_decay is None else self.lr_decay.to_json()
        return section


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """The preset's `data` section, typed; each field's default is the one every preset starts from.

    Attributes:
        embeddings: the paper's word vectors (a catalog name, a path or `"none"`).
        oov: the paper's rule for words without a vector (`OOV_RULES`, `zoo.data.embeddings`).
        lowercase: whether the tokenizer lowercases.
        max_premise_length, max_hypothesis_length: tokens kept of each sentence (None: all).
        max_vocabulary: words unseen in training keep their pretrained vector, frozen (Rocktäschel et al.
            §2.2.1 rely on it): the vocabulary grows with such words, from the dev/test data and the vector
            file's most frequent words, up to this many ids in all (0 or None: training words only).
    """

    embeddings: str = "glove-840b-300d"
    oov: str = "rocktaschel"
    lowercase: bool = True
    max_premise_length: Optional[int] = 100
    max_hypothesis_length: Optional[int] = 100
    max_vocabulary: Optional[int] = 100_000

    @classmethod
    def of(cls, section):
        """The settings of a preset's `data` section (a dict; missing keys take the defaults), or `section`
        itself when already typed.

        Raises:
            ConfigError: an unknown key, or the first value that cannot be right (named).
        """
        if isinstance(section, cls):
            return section
        s = _known(section, "data", cls)
        lengths = {}
        for key in ("max_premise_length", "max_hypothesis_length"):
            value = s.get(key, getattr(cls, key))
            lengths[key] = None if value is None else values.count(value, key)
        vocabulary = s.get("max_vocabulary", cls.max_vocabulary)
        lowercase = s.get("lowercase", cls.lowercase)
        if not isinstance(lowercase, bool):
            raise ConfigError(f"lowercase must be true or false, got {lowercase!r}")
        embeddings = s.get("embeddings", cls.embeddings)
        if not isinstance(embeddings, str) or not embeddings:
            raise ConfigError(f"embeddings must name word vectors (a name, a path or \"none\"), got {embeddings!r}")
        return cls(embeddings=embeddings, oov=values.choice(s.get("oov", cls.oov), "oov", OOV_RULES),
                   lowercase=lowercase, max_vocabulary=None if vocabulary is None else values.count(
                       vocabulary, "max_vocabulary", zero=True), **lengths)

    def to_json(self):
        """The section as a preset and `config.json` write it."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """A paper preset, typed: the model's constructor arguments (a dict), `TrainSettings` and `DataSettings`."""

    model: dict
    train: TrainSettings = TrainSettings()
    data: DataSettings = DataSettings()

    @classmethod
    def of(cls, preset):
        """The settings of a preset dict (`{"model", "train", "data"}`, as `zoo.get_preset` and
        `config.json` hold it), or `preset` itself when already typed.

        Raises:
            ConfigError: as `TrainSettings.of` and `DataSettings.of`; a preset that is not an object.
        """
        if isinstance(preset, cls):
            return preset
        if not isinstance(preset, dict):
            raise ConfigError(f"a preset must be an object with model, train and data sections, got {preset!r}")
        model = preset.get("model", {})
        if not isinstance(model, dict):
            raise ConfigError(f"the preset's model section must be an object, got {model!r}")
        for key, check in MODEL_CHECKS.items():  # here, naming the setting, not deep inside Keras
            if key in model:
                check(model[key], key)
        return cls(model=dict(model), train=TrainSettings.of(preset.get("train", {})),
                   data=DataSettings.of(preset.get("data", {})))

    def to_json(self):
        """The preset dict (`{"model", "train", "data"}`), as `zoo.get_preset` and `config.json` hold it."""
        return {"model": dict(self.model), "train": self.train.to_json(), "data": self.data.to_json()}

    def names(self):
        """Every setting's name, of the three sections."""
        return set(self.model) | _field_names(TrainSettings) | _field_names(DataSettings)

    def value(self, name):
        """The value of the setting `name` as a preset writes it (`lr_decay` a dict), from the first section that
        has it: model, train, data.

        Raises:
            KeyError: no section has it.
        """
        if name in self.model:
            return self.model[name]
        for section in (self.train, self.data):
            if name in _field_names(type(section)):
                value = getattr(section, name)
                return value.to_json() if isinstance(value, LearningRateDecay) else value
        raise KeyError(name)

    def with_overrides(self, overrides):
        """A copy with `overrides` (`{name: value}`, `--set`) applied to each section that has the setting, each
        new value checked as the section's `of` checks it.

        Raises:
            ConfigError: a name no section has (the message lists the model's settings), or a value that cannot
                be right (named).
        """
        changes = {"model": {}, "train": {}, "data": {}}
        for key, value in overrides.items():
            sections = [name for name, known in (("model", set(self.model)), ("train", _field_names(TrainSettings)),
                                                 ("data", _field_names(DataSettings))) if key in known]
            if not sections:
                raise ConfigError(f"unknown setting {key!r}; settings of this model: {', '.join(sorted(self.names()))}")
            for section in sections:
                changes[section][key] = value
        model = {**self.model, **changes["model"]}
        for key, check in MODEL_CHECKS.items():
            if key in changes["model"]:
                check(model[key], key)
        # each changed value checked alone (`of` of just those keys), then put in the typed section
        train, data = TrainSettings.of(changes["train"]), DataSettings.of(changes["data"])
        return RunSettings(
            model=model,
            train=dataclasses.replace(self.train, **{k: getattr(train, k) for k in changes["train"]}),
            data=dataclasses.replace(self.data, **{k: getattr(data, k) for k in changes["data"]}))

    def replace(self, model=None, train=None, data=None):
        """A copy with `model` settings updated and `train` / `data` settings (dicts) replaced, checked."""
        return RunSettings.of({"model": {**self.model, **(model or {})},
                               "train": {**self.train.to_json(), **(train or {})},
                               "data": {**self.data.to_json(), **(data or {})}})

    @property
    def trees(self):
        """The model's `trees` argument (`"syntactic"`: it reads parse trees), or None."""
        return self.model.get("trees")

    @property
    def max_depth(self):
        """The model's `max_depth` argument (tree models), or None."""
        return self.model.get("max_depth")


def _field_names(cls):
    return {f.name for f in dataclasses.fields(cls)}


def _known(section, name, cls):
    """`section` (a dict) once its keys are checked to be settings of `cls`."""
    if not isinstance(section, dict):
        raise ConfigError(f"the preset's {name} section must be an object, got {section!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ConfigError(f"unknown {name} setting {unknown[0]!r}; {name} settings: {', '.join(sorted(known))}")
    return section
