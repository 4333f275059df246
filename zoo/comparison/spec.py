"""`SweepSpec`: what a sweep trains, from `nli-zoo sweep`'s flags or a small JSON or YAML file.

A grid sweep trains every combination of the models, the seeds and the values of each setting given more
than once (one trial, one run directory each). A search (`search: random` or `bayesian`, KerasTuner's
oracles) samples the `tune` space `max_trials` times and trains each sample once per seed.

```yaml
models: [bowman_lstm, hypothesis_only]
seeds: 3                        # seeds 0, 1, 2; or a list: [0, 7, 42]
set: {hidden_size: [16, 32], dropout: 0.1}   # a list is a grid axis ([[1, 2]]: the list [1, 2] itself)
dataset: snli_sample
embeddings: glove-6b-50d
epochs: 2
```
```yaml
models: [esim]
seeds: 2
search: bayesian                # or random
max_trials: 12
tune: {learning_rate: {min: 1.0e-4, max: 1.0e-2, log: true}, dropout: {min: 0.0, max: 0.5},
       hidden_size: [100, 200, 300], lr_decay.wait: {min: 1, max: 3}}
```
A dotted key (`lr_decay.wait`) changes one entry of a setting that is a mapping (ESIM's halve-on-plateau
schedule), keeping the model's other entries.
"""

import dataclasses
import itertools
import json
import os
import re
from typing import Optional

from zoo.errors import ConfigError, UserError
from zoo.registry import get_preset
from zoo.settings import values
from zoo.training.config import RunConfig, parse_value

SEARCHES = ("grid", "random", "bayesian")
DEFAULT_MAX_TRIALS = 10
# The training options a sweep gives every run (keyword arguments of `zoo.training.train`), with their types.
TRAIN_OPTIONS = {"dataset": str, "data_dir": str, "embeddings": str, "embedding_dim": int, "epochs": int,
                 "batch_size": int, "max_train_examples": int, "max_eval_examples": int}
# How the runs show their progress: not part of what the sweep is.
RUNTIME_OPTIONS = {"verbose": int}
ENTRIES = ("models", "seeds", "set", "tune", "search", "max_trials", *TRAIN_OPTIONS, *RUNTIME_OPTIONS)
RUNS_DIR = "runs"  # SWEEP/runs/NAME: the run directories


class SpecError(UserError):
    """A sweep specification that cannot be right (one line, exit status 2)."""


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """What a sweep trains.

    Attributes:
        models: registered model names.
        seeds: the random seeds each setting is trained with.
        settings: `{preset key: (value, ...)}`; one value sets it for every run, several make a grid axis.
        tune: `{preset key: {"min", "max", "log"} or {"values": [...]}}`, the space of a search.
        search: "grid", "random" or "bayesian".
        max_trials: the number of samples of a search (None for a grid: all its points).
        train: the other training options of every run (`TRAIN_OPTIONS`).
        verbose: Keras's progress output of each run (None: as `nli-zoo train`).
    """

    models: tuple
    seeds: tuple = (0,)
    settings: dict = dataclasses.field(default_factory=dict)
    tune: dict = dataclasses.field(default_factory=dict)
    search: str = "grid"
    max_trials: Optional[int] = None
    train: dict = dataclasses.field(default_factory=dict)
    verbose: Optional[int] = None

    # Construction -----------------------------------------------------------------------------------
    @classmethod
    def create(cls, entries, where="the sweep"):
        """A checked specification from a mapping of `ENTRIES` (a spec file's, or the flags').

        Args:
            entries: `{entry: value}`; `set` maps keys to a value or a list of values (an axis), `tune` keys
                to `{"min", "max"[, "log"]}` or a list of values; `seeds` is a count or a list.
            where: what the entries came from, for the messages (a file name, "the command line").

        Raises:
            SpecError: an unknown entry, or a value of the wrong kind or range.
        """
        unknown = sorted(set(entries) - set(ENTRIES))
        if unknown:
            raise SpecError(f"{where}: unknown entr{'y' if len(unknown) == 1 else 'ies'} "
                            f"{', '.join(map(repr, unknown))}; entries: {', '.join(ENTRIES)}")
        models = entries.get("models")
        if isinstance(models, str):
            models = [models]
        if not models or not all(isinstance(m, str) for m in models):
            raise SpecError(f"{where}: models: give one or more model names (see nli-zoo models)")
        seeds = _seeds(entries.get("seeds", 1), where)
        settings = {}
        for key, value in (entries.get("set") or {}).items():
            values = tuple(value) if isinstance(value, list) else (value,)
            if not values:
                raise SpecError(f"{where}: set {key}: an empty list of values")
            settings[str(key)] = values
        tune = {str(key): _range(key, value, where) for key, value in (entries.get("tune") or {}).items()}
        search = entries.get("search") or "grid"
        if search not in SEARCHES:
            raise SpecError(f"{where}: search must be one of {', '.join(SEARCHES)}, got {search!r}")
        max_trials = entries.get("max_trials")
        train, verbose = {}, entries.get("verbose")
        for name, kind in TRAIN_OPTIONS.items():
            if entries.get(name) is not None:
                if not isinstance(entries[name], kind) or isinstance(entries[name], bool):
                    raise SpecError(f"{where}: {name} must be {'a whole number' if kind is int else 'a string'}, "
                                    f"got {entries[name]!r}")
                train[name] = entries[name]
        if verbose not in (None, 0, 1, 2):
            raise SpecError(f"{where}: verbose must be 0, 1 or 2, got {verbose!r}")
        if search == "grid":
            if tune:
                raise SpecError(f"{where}: tune ({', '.join(tune)}) is the space of a search: add "
                                "--search random (or bayesian), or give the values as a grid axis with --set")
            if max_trials is not None:
                raise SpecError(f"{where}: max_trials is for a search; a grid trains all its points")
        else:
            if not tune:
                raise SpecError(f"{where}: a {search} search needs a space: --tune KEY=MIN:MAX[:log] or "
                                "KEY=V1,V2,... (e.g. --tune learning_rate=1e-4:1e-2:log)")
            axes = [key for key, values in settings.items() if len(values) > 1]
            if axes:
                raise SpecError(f"{where}: set {axes[0]} has several values (a grid axis); in a {search} search "
                                f"give them as --tune {axes[0]}=V1,V2,...")
            max_trials = DEFAULT_MAX_TRIALS if max_trials is None else max_trials
            if not isinstance(max_trials, int) or isinstance(max_trials, bool) or max_trials < 1:
                raise SpecError(f"{where}: max_trials must be a whole number > 0, got {max_trials!r}")
        return cls(models=tuple(models), seeds=seeds, settings=settings, tune=tune, search=search,
                   max_trials=max_trials, train=train, verbose=verbose)

    @classmethod
    def read(cls, path):
        """The entries of a spec file: JSON (`.json`) or YAML (`.yaml`, `.yml`), one mapping.

        Raises:
            SpecError: a missing or unreadable file, or one that is not a mapping (with the line where the
                parser stopped).
        """
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise SpecError(f"{path}: cannot read the sweep spec ({error.strerror or error})") from None
        except UnicodeDecodeError as error:
            line = error.object[:error.start].count(b"\n") + 1
            raise SpecError(f"{path}:{line}: not UTF-8 text (byte {error.start}): save the spec as UTF-8") from None
        if path.endswith((".yaml", ".yml")):
            import yaml  # PyYAML: only for YAML spec files

            try:
                entries = yaml.safe_load(text)
            except yaml.YAMLError as error:
                mark = getattr(error, "problem_mark", None)
                line = f":{mark.line + 1}" if mark is not None else ""
                raise SpecError(f"{path}{line}: not valid YAML ({getattr(error, 'problem', None) or error})") from None
        else:
            try:
                entries = json.loads(text)
            except ValueError as error:
                raise SpecError(f"{path}:{error.lineno}: not valid JSON ({error.msg}); a .yaml or .yml file is "
                                "read as YAML") from None
        if not isinstance(entries, dict):
            raise SpecError(f"{path}: a sweep spec is one mapping of entries ({', '.join(ENTRIES)})")
        return entries

    # Trials -----------------------------------------------------------------------------------------
    def axes(self):
        """The grid's axes in order, `[(name, values)]`: `model`, each setting with several values, `seed`."""
        return ([("model", self.models)] + [(k, v) for k, v in self.settings.items() if len(v) > 1]
                + [("seed", self.seeds)])

    def points(self):
        """Every point of the grid, `{"model", ..., "seed"}`, models outermost and seeds innermost."""
        names, values = zip(*self.axes())
        return [dict(zip(names, combination)) for combination in itertools.product(*values)]

    def overrides(self, values):
        """The preset overrides of one run: the fixed settings, the point's or sample's values (dotted keys
        changing one entry of a mapping setting of the model)."""
        model = values["model"]
        chosen = {key: value[0] for key, value in self.settings.items()}
        chosen.update({key: value for key, value in values.items() if key not in ("model", "seed")})
        overrides = {key: value for key, value in chosen.items() if "." not in key}
        for key, value in chosen.items():
            if "." in key:
                name, entry = key.split(".", 1)
                base = overrides.get(name, _preset_value(model, name))
                if not isinstance(base, dict):
                    raise SpecError(f"{key}: {model}'s {name} is {base!r}, not a mapping with an entry {entry!r}")
                overrides[name] = {**base, entry: value}
        return overrides

    def run_name(self, values, seed, trial_id=None):
        """The run directory's name: the model, the values that vary, the seed (`bowman_lstm-hidden_size=16-
        seed=0`); a search's runs start with the trial (`trial03-esim-learning_rate=0.00123-seed=0`)."""
        varying = [k for k, v in self.settings.items() if len(v) > 1] + list(self.tune)
        parts = ([f"trial{trial_id}"] if trial_id is not None else []) + [values["model"]]
        parts += [f"{key}={_short(values[key])}" for key in varying if key in values]
        return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", "-".join(parts + [f"seed={seed}"]))

    def train_options(self, values, seed, directory, trial_id=None):
        """The keyword arguments of `zoo.training.train` for one run of the sweep in `directory`."""
        options = dict(self.train, model=values["model"], seed=seed, overrides=self.overrides(values),
                       run_dir=os.path.join(directory, RUNS_DIR, self.run_name(values, seed, trial_id)))
        if self.verbose is not None:
            options["verbose"] = self.verbose
        return options

    # Checks -----------------------------------------------------------------------------------------
    def check(self, directory):
        """Checks every run the sweep can train, as `nli-zoo train` would, before any trains: each grid point,
        or each model at both ends of every range of a search.

        Raises:
            SpecError: naming the run's setting that cannot be right.
        """
        for model in self.models:
            try:
                get_preset(model)
            except ValueError as error:
                raise SpecError(f"models: {error}") from None
        if self.search == "grid":
            candidates = self.points()
        else:
            candidates = []
            for model in self.models:
                for key, space in self.tune.items():
                    for value in space.get("values") or (space["min"], space["max"]):
                        candidates.append({"model": model, key: value, "seed": self.seeds[0]})
        for values in candidates:
            try:
                RunConfig.create(**self.train_options(values, values["seed"], directory))
            except ConfigError as error:
                shown = ", ".join(f"{k}={v}" for k, v in values.items() if k != "seed")
                raise SpecError(f"{shown}: {error}") from None

    def to_json(self):
        """What the sweep is, as `SWEEP/sweep.json` records it (a rerun must match it)."""
        return {"models": list(self.models), "seeds": list(self.seeds),
                "set": {k: list(v) for k, v in self.settings.items()}, "tune": self.tune, "search": self.search,
                "max_trials": self.max_trials, "train": self.train}


def entries_from_flags(models=None, seeds=None, settings=(), tune=(), search=None, max_trials=None, **train):
    """Spec entries from `nli-zoo sweep`'s flags (only those given).

    Args:
        models: model names. seeds: "N" (seeds 0..N-1) or "A,B,...".
        settings: `--set KEY=VALUE` items; a key given several times is a grid axis.
        tune: `--tune KEY=MIN:MAX[:log]` or `KEY=V1,V2,...` items.
        search, max_trials, **train: the other entries (None: not given).

    Raises:
        SpecError: an item without `=`, a range that is not MIN:MAX[:log].
    """
    entries = {name: value for name, value in train.items() if value is not None}
    if models:
        entries["models"] = list(models)
    if seeds is not None:
        text = str(seeds).strip()
        try:
            entries["seeds"] = ([int(s) for s in text.split(",") if s.strip()] if "," in text else int(text))
        except ValueError:
            raise SpecError(f"--seeds expects a count N or a list A,B,..., got {seeds!r}") from None
    if settings:
        grouped = {}
        for item in settings:
            key, value = _item("--set", item)
            grouped.setdefault(key, []).append(parse_value(value))
        # a key given once is one value (a list value stays that list); given several times, a grid axis
        entries["set"] = {k: (v if len(v) > 1 else [v[0]] if isinstance(v[0], list) else v[0])
                          for k, v in grouped.items()}
    if tune:
        space = {}
        for item in tune:
            key, value = _item("--tune", item)
            if ":" in value:
                parts = value.split(":")
                if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
                    raise SpecError(f"--tune {item}: a range is MIN:MAX or MIN:MAX:log")
                space[key] = {"min": parse_value(parts[0]), "max": parse_value(parts[1]), "log": len(parts) == 3}
            else:
                space[key] = [parse_value(v) for v in value.split(",")]
        entries["tune"] = space
    if search is not None:
        entries["search"] = search
    if max_trials is not None:
        entries["max_trials"] = max_trials
    return entries


def _item(flag, item):
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise SpecError(f"{flag} expects KEY=VALUE, got {item!r}")
    return key.strip(), value


def _seeds(value, where):
    """The seeds of a count (seeds 0..N-1) or a list, each checked as every seed is (`zoo.settings.values`)."""
    try:
        if isinstance(value, list) and value:
            seeds = tuple(values.seed(seed, "a seed") for seed in value)
            if len(set(seeds)) != len(seeds):
                raise SpecError(f"{where}: seeds {value}: a seed is listed twice")
            return seeds
        return tuple(range(values.count(value, "seeds")))
    except ConfigError as error:
        raise SpecError(f"{where}: {error} (seeds: a count >= 1 or a list of seeds)") from None


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _range(key, value, where):
    """A `tune` entry as `{"values": [...]}` or `{"min", "max", "log"}`."""
    if isinstance(value, list):
        if not value or not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
            raise SpecError(f"{where}: tune {key}: give one or more numbers or strings, got {value!r}")
        return {"values": list(value)}
    if not isinstance(value, dict) or set(value) - {"min", "max", "log"} or not {"min", "max"} <= set(value):
        raise SpecError(f"{where}: tune {key}: give {{min, max[, log]}} or a list of values, got {value!r}")
    low, high, log = value["min"], value["max"], bool(value.get("log", False))
    if not (_number(low) and _number(high) and low < high):
        raise SpecError(f"{where}: tune {key}: min and max must be numbers with min < max, got {low!r}, {high!r}")
    if log and low <= 0:
        raise SpecError(f"{where}: tune {key}: a log range needs min > 0, got {low!r}")
    return {"min": low, "max": high, "log": log}


def _preset_value(model, name):
    try:
        value = get_preset(model).value(name)
    except KeyError:
        raise SpecError(f"unknown setting {name!r} for {model}") from None
    return value


def _short(value):
    """A value as it appears in a run's name."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
