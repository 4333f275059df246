"""A run's typed settings: the preset's `train` and `data` sections as validated, frozen objects.

A preset (`zoo.get_preset`) and a run's `config.json` hold three sections: `model` (the model's constructor
keyword arguments, Keras-style: they stay a dict), `train` and `data`. `TrainSettings` and `DataSettings` are
the last two, typed and checked once, naming the setting in a one-line `ConfigError`; `RunSettings` holds
all three. Training builds them from its `RunConfig` (`zoo.training.config`); scoring a finished run builds
them from its `config.json` (`RunSettings.of(config_json["preset"])`), which keeps its format.

They live here, on the runs floor, because both training and a finished run's readers (evaluation, export)
use them, and `zoo.runs` does not import `zoo.training`.

```python
from zoo.runs.settings import RunSettings
settings = RunSettings.of(zoo.get_preset("esim"))
settings.train.learning_rate, settings.train.lr_decay.kind, settings.data.max_premise_length
```
"""

import dataclasses
import math
from typing import Optional

from zoo.errors import ConfigError

# The optimizers `keras.optimizers.get` knows by name (checked before anything is written to a run).
OPTIMIZERS = ("adadelta", "adafactor", "adagrad", "adam", "adamax", "adamw", "ftrl", "lamb", "lion", "nadam",
              "rmsprop", "sgd")
DECAY_KINDS = ("exponential", "step", "halve_on_plateau")


def is_number(value):
    """A finite int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_positive(name, value, integer=False, zero=False):
    """Raises `ConfigError` naming `name` unless `value` is a (whole) number > 0 (>= 0 with `zero`)."""
    kind = "a whole number" if integer else "a number"
    bound = ">= 0" if zero else "> 0"
    ok = is_number(value) and (value >= 0 if zero else value > 0)
    if integer and ok:
        ok = float(value).is_integer()
    if not ok:
        raise ConfigError(f"{name} must be {kind} {bound}, got {value!r}")
    return int(value) if integer else value


def check_unit_interval(name, value):
    """Raises `ConfigError` unless `value` is a number in [0, 1)."""
    if not (is_number(value) and 0 <= value < 1):
        raise ConfigError(f"{name} must be a number in [0, 1), got {value!r}")
    return value


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
        if is_number(value):
            value = {"type": "exponential", "rate": value}
        if not isinstance(value, dict):
            raise ConfigError(f"lr_decay must be null, a number or an object with a \"type\", got {value!r}")
        kind = value.get("type", "exponential")
        if kind not in DECAY_KINDS:
            raise ConfigError(f"lr_decay type must be one of {', '.join(DECAY_KINDS)}, got {kind!r}")
        keys = {"type", "factor", "wait"} if kind == "halve_on_plateau" else {"type", "rate", "every_epochs"}
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ConfigError(f"lr_decay of type {kind!r} has no setting {unknown[0]!r}; its settings: "
                              f"{', '.join(sorted(keys))}")
        if kind == "halve_on_plateau":
            factor = check_positive("lr_decay factor", value.get("factor", 0.5))
            return cls(kind=kind, factor=float(factor), wait=check_positive("lr_decay wait", value.get("wait", 1),
                                                                            integer=True))
        if "rate" not in value:
            raise ConfigError(f"lr_decay of type {kind!r} needs a \"rate\" (the factor per step)")
        return cls(kind=kind, rate=float(check_positive("lr_decay rate", value["rate"])),
                   every_epochs=check_positive("lr_decay every_epochs", value.get("every_epochs", 1), integer=True))

    @property
    def on_plateau(self):
        """Whether the schedule is Chen et al.'s halve-on-plateau."""
        return self.kind == "halve_on_plateau"


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """The preset's `train` section, typed (`zoo.registry.DEFAULT_TRAIN` lists the defaults)."""

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-7
    batch_size: int = 32
    global_clipnorm: Optional[float] = None
    epochs: int = 20
    patience: Optional[int] = None
    lr_decay: Optional[LearningRateDecay] = None
    l2: float = 0.0

    @classmethod
    def of(cls, section):
        """The settings of a preset's `train` section (a dict), or `section` itself when already typed.

        Raises:
            ConfigError: an unknown key, or the first value that cannot be right (named).
        """
        if isinstance(section, cls):
            return section
        _check_keys("train", section, cls)
        s = dict(section)
        optimizer = s.get("optimizer", "adam")
        if not isinstance(optimizer, str) or optimizer.lower() not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
        clipnorm = s.get("global_clipnorm")
        patience = s.get("patience")
        return cls(
            optimizer=optimizer.lower(),
            learning_rate=float(check_positive("learning_rate", s.get("learning_rate", 1e-3), zero=True)),
            beta_1=check_unit_interval("beta_1", s.get("beta_1", 0.9)),
            beta_2=check_unit_interval("beta_2", s.get("beta_2", 0.999)),
            epsilon=check_positive("epsilon", s.get("epsilon", 1e-7)),
            batch_size=check_positive("batch_size", s.get("batch_size", 32), integer=True),
            global_clipnorm=None if clipnorm is None else check_positive("global_clipnorm", clipnorm),
            epochs=check_positive("epochs", s.get("epochs", 20), integer=True),
            patience=None if patience is None else check_positive("patience", patience, integer=True, zero=True),
            lr_decay=LearningRateDecay.of(s.get("lr_decay")),
            l2=0.0 if s.get("l2") is None else float(check_positive("l2", s["l2"], zero=True)))


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """The preset's `data` section, typed (`zoo.registry.DEFAULT_DATA` lists the defaults).

    Attributes:
        embeddings: the paper's word vectors (a catalog name, a path or `"none"`).
        oov: the paper's rule for words without a vector (`zoo.data.embeddings`).
        lowercase: whether the tokenizer lowercases.
        max_premise_length, max_hypothesis_length: tokens kept of each sentence (None: all).
        max_vocabulary: the most ids the vocabulary grows to with pretrained words (0: training words only).
    """

    embeddings: str = "none"
    oov: str = "rocktaschel"
    lowercase: bool = True
    max_premise_length: Optional[int] = None
    max_hypothesis_length: Optional[int] = None
    max_vocabulary: Optional[int] = None

    @classmethod
    def of(cls, section):
        """The settings of a preset's `data` section (a dict), or `section` itself when already typed.

        Raises:
            ConfigError: an unknown key, or the first value that cannot be right (named).
        """
        if isinstance(section, cls):
            return section
        _check_keys("data", section, cls)
        s = dict(section)
        lengths = {key: None if s.get(key) is None else check_positive(key, s[key], integer=True)
                   for key in ("max_premise_length", "max_hypothesis_length")}
        vocabulary = s.get("max_vocabulary")
        if not isinstance(s.get("lowercase", True), bool):
            raise ConfigError(f"lowercase must be true or false, got {s['lowercase']!r}")
        return cls(embeddings=str(s.get("embeddings", "none")), oov=s.get("oov", "rocktaschel"),
                   lowercase=s.get("lowercase", True), max_vocabulary=None if vocabulary is None else check_positive(
                       "max_vocabulary", vocabulary, integer=True, zero=True), **lengths)


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """A preset, typed: the model's constructor arguments (a dict), `TrainSettings` and `DataSettings`."""

    model: dict
    train: TrainSettings
    data: DataSettings

    @classmethod
    def of(cls, preset):
        """The settings of a preset dict (`{"model", "train", "data"}`, as `config.json` records it), or
        `preset` itself when already typed.

        Raises:
            ConfigError: as `TrainSettings.of` and `DataSettings.of`.
        """
        if isinstance(preset, cls):
            return preset
        return cls(model=dict(preset.get("model", {})), train=TrainSettings.of(preset.get("train", {})),
                   data=DataSettings.of(preset.get("data", {})))

    @property
    def trees(self):
        """The model's `trees` argument (`"syntactic"`: it reads parse trees), or None."""
        return self.model.get("trees")

    @property
    def max_depth(self):
        """The model's `max_depth` argument (tree models), or None."""
        return self.model.get("max_depth")


def data_settings_of(value):
    """The `DataSettings` of a `DataSettings`, a `RunSettings` or a preset dict (as `config.json` records it)."""
    if isinstance(value, DataSettings):
        return value
    return RunSettings.of(value).data


def _check_keys(section_name, section, cls):
    if not isinstance(section, dict):
        raise ConfigError(f"the preset's {section_name} section must be an object, got {section!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ConfigError(f"unknown {section_name} setting {unknown[0]!r}; {section_name} settings: "
                          f"{', '.join(sorted(known))}")
