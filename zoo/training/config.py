"""`RunConfig`: one typed configuration of a training run, built once, validated once, passed whole.

It is built from `train.py`'s command line (`RunConfig.from_options`, with the options
`zoo.commands.train` parsed) or from Python keyword arguments (`RunConfig.create(model="esim",
dataset="snli_sample", ...)`), resolves the paper preset with the overrides once, and is never changed
afterwards (a frozen dataclass). What the run trains with travels typed: `config.settings`
(`zoo.settings.RunSettings`: the paper preset with the overrides), with `config.train` (`TrainSettings`),
`config.data` (`DataSettings`) and `config.model_settings` (the model's constructor keyword arguments, a
dict). `identity()` holds the entries a rerun must match to resume, `to_json()` the whole request, which
training completes into the run's `config.json` (`zoo.runs.record.RunRecord`).

Example:
```python
from zoo.training.config import RunConfig
config = RunConfig.create(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1,
                          overrides={"hidden_size": 8})
config.train.epochs, config.data.max_premise_length, config.run_dir     # 1, 100, 'runs/bowman_lstm'
```

Every value is checked by the validator of its kind (`zoo.settings.values`), the same one each command's
flags use.
"""

import dataclasses
import json
import os
import sys
from typing import Optional

from zoo.constants import EMBEDDING_DIM
from zoo.data.corpora import check_source
from zoo.data.embeddings import check_vectors
from zoo.data.errors import DataUnavailableError
from zoo.errors import ConfigError
from zoo.fileio import CorruptFileError
from zoo.registry import get_preset
from zoo.runs.layout import default_run_dir
from zoo.runs.record import load_record
from zoo.settings import DataSettings, RunSettings, TrainSettings, values

__all__ = ["RunConfig", "TrainSettings", "DataSettings", "RunSettings", "parse_overrides", "parse_value"]

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")
MIXED_PRECISION = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
JIT_COMPILE = {"auto": "auto", "true": True, "false": False}

VERBOSITY = (0, 1, 2)
ATTENTION_SCALES = ("relative", "absolute")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What a training run is: the model, its preset, the data, the vectors and how to run it.

    Attributes:
        model: the registered model name.
        settings: the paper preset with every override applied (`zoo.settings.RunSettings`).
        overrides: the settings the user changed (`--set`, `--epochs`, `--batch-size`, `--embeddings`).
        embeddings: the word vectors (a name, a path or `"none"`): the preset's unless given.
        embedding_dim: the vector size with `embeddings="none"` (default `zoo.constants.EMBEDDING_DIM`, the papers').
        dataset, data_dir: where the data comes from (`data_dir`, a path, wins over `dataset`).
        fields, labels, roles: how to read an NLI file and which split plays which role.
        max_train_examples, max_eval_examples: caps on the splits (quick experiments).
        shuffle, bucket: shuffle the training pairs; batch pairs of one length-grid cell together.
        seed: the random seed.
        members: `(esim_run, tree_run)` to combine into HIM without training.
        init_from: a finished run to start from (fine-tuning).
        run_dir: the run directory (default `runs/MODEL`); logdir: TensorBoard's (default `RUN/logs`).
        overwrite: start again in a directory that holds another or a finished run.
        strategy, cluster_timeout, mixed_precision, jit_compile, compile_cache: how to run.
        log_every, attention_examples, verbose: what to show (`log_every` None: about 20 batch points per
            epoch; `verbose` None: Keras's progress bar on a terminal, one line per epoch otherwise;
            `attention_scale`: "relative" colours each attention map over its own range, "absolute" is the
            papers' 0-1 grey scale; `images_every`: draw the attention and confusion images after every
            Nth epoch and after the last, 0 never; default 5: on a small data set they cost a fifth of an
            epoch, on SNLI a rounding error).
        cpu_devices, pause_after_epoch: test hooks (logical CPUs, a pause to interrupt between epochs).
    """

    model: str
    settings: RunSettings
    overrides: dict = dataclasses.field(default_factory=dict)
    embeddings: str = "none"
    embedding_dim: Optional[int] = None
    dataset: str = "snli"
    data_dir: Optional[str] = None
    fields: Optional[str] = None
    labels: Optional[str] = None
    roles: Optional[str] = None
    max_train_examples: Optional[int] = None
    max_eval_examples: Optional[int] = None
    shuffle: bool = True
    bucket: bool = True
    seed: int = 0
    members: Optional[tuple] = None
    init_from: Optional[str] = None
    run_dir: str = ""
    logdir: Optional[str] = None
    overwrite: bool = False
    strategy: str = "auto"
    cluster_timeout: Optional[float] = None
    mixed_precision: Optional[str] = None
    jit_compile: object = "auto"
    compile_cache: Optional[str] = None
    log_every: Optional[int] = None
    attention_examples: int = 3
    attention_scale: str = "relative"
    images_every: int = 5
    verbose: Optional[int] = None
    cpu_devices: Optional[int] = None
    pause_after_epoch: float = 0.0

    # Construction -----------------------------------------------------------------------------------
    @classmethod
    def create(cls, model, overrides=None, epochs=None, batch_size=None, embeddings=None, **options):
        """A validated configuration from keyword arguments.

        Args:
            model: the registered model name.
            overrides: preset settings to change, `{key: value}` or `["key=value", ...]` (as `--set`).
            epochs, batch_size, embeddings: shortcuts for those preset settings.
            **options: the other fields of `RunConfig` (not `settings`, which is resolved here).

        Raises:
            ConfigError: an unknown model, setting or option, or a value of the wrong kind or range.
        """
        unknown = set(options) - {f.name for f in dataclasses.fields(cls)} | ({"settings"} & set(options))
        if unknown:
            raise ConfigError(f"unknown training option(s) {', '.join(sorted(unknown))}; options: "
                              f"{', '.join(sorted(cls.option_names()))}")
        if isinstance(overrides, (list, tuple)):
            overrides = parse_overrides(overrides)
        overrides = dict(overrides or {})
        for key, value in (("epochs", epochs), ("batch_size", batch_size), ("embeddings", embeddings)):
            if value is not None:
                overrides[key] = value
        init_from = options.get("init_from")
        init_record = _init_run_record(init_from) if init_from else None
        if init_record is not None:
            if "embeddings" not in overrides:
                overrides["embeddings"] = init_record.embeddings  # fine-tuning keeps the run's vectors
            dim = options.get("embedding_dim")
            if dim is not None and init_record.embedding_dim != dim:
                raise ConfigError(f"--embedding-dim {dim} does not fit --init-from {init_from}, whose word vectors "
                                  f"are {init_record.embedding_dim}-d: leave --embedding-dim out")
        try:
            settings = get_preset(model).with_overrides(overrides)
        except ValueError as error:  # an unknown model or setting, a value of the wrong kind (ConfigError)
            raise ConfigError(str(error)) from None
        options.setdefault("run_dir", None)
        options["run_dir"] = options["run_dir"] or default_run_dir(model)
        if options.get("members") is not None:
            options["members"] = tuple(options["members"])
        config = cls(model=model, settings=settings, overrides=overrides, embeddings=settings.data.embeddings,
                     **options)
        config.validate()
        return config

    @classmethod
    def from_options(cls, model, overrides=(), epochs=None, batch_size=None, embeddings=None, no_shuffle=False,
                     no_bucket=False, **options):
        """The configuration of `train.py`'s command-line options (`zoo.commands.train` passes them as
        keyword arguments): `overrides` are the `--set KEY=VALUE` strings, `no_shuffle`/`no_bucket` the
        flags; options `RunConfig` does not have are an error.

        Raises:
            ConfigError: as `create`.
        """
        overrides = parse_overrides(overrides)
        return cls.create(model, overrides=overrides, epochs=epochs, batch_size=batch_size, embeddings=embeddings,
                          shuffle=not no_shuffle, bucket=not no_bucket, **options)

    @classmethod
    def option_names(cls):
        """The keyword arguments `create` takes besides the preset shortcuts."""
        shortcuts = ("model", "settings", "overrides", "embeddings")
        return [f.name for f in dataclasses.fields(cls) if f.name not in shortcuts]

    def replace(self, **changes):
        """A validated copy with `changes` (the configuration itself never changes)."""
        config = dataclasses.replace(self, **changes)
        config.validate()
        return config

    # Typed settings ---------------------------------------------------------------------------------
    @property
    def train(self):
        """The training settings (`TrainSettings`: optimizer, learning rate, batch size, epochs, ...)."""
        return self.settings.train

    @property
    def data(self):
        """The data settings (`DataSettings`: lowercase, maximum lengths, OOV rule, vocabulary size)."""
        return self.settings.data

    @property
    def model_settings(self):
        """The model's constructor keyword arguments (a dict, as Keras takes them)."""
        return self.settings.model

    # Validation -------------------------------------------------------------------------------------
    def validate(self):
        """Checks every option once, by the validator of its kind (`zoo.settings.values`), naming the option
        (the preset's settings were checked when `settings` was built).

        Raises:
            ConfigError: the first option that cannot be right.
        """
        RunSettings.of(self.settings.to_json())  # a `replace(settings=...)` is checked as `create` checks
        for key in ("max_train_examples", "max_eval_examples", "cpu_devices"):
            if getattr(self, key) is not None:
                values.count(getattr(self, key), f"--{key.replace('_', '-')}")
        if self.embedding_dim is not None:
            values.count(self.embedding_dim, "--embedding-dim")
            if self.embeddings != "none":
                raise ConfigError(f"--embedding-dim sizes random word vectors (--embeddings none); {self.embeddings} "
                                  "vectors have their own size: leave --embedding-dim out")
        values.seed(self.seed, "--seed")
        for key in ("log_every", "attention_examples", "images_every"):
            if getattr(self, key) is not None:
                values.count(getattr(self, key), f"--{key.replace('_', '-')}", zero=True)
        values.choice(self.attention_scale, "--attention-scale", ATTENTION_SCALES)
        if self.verbose is not None:
            values.choice(self.verbose, "--keras-verbose", VERBOSITY)
        if self.cluster_timeout is not None:
            values.number(self.cluster_timeout, "--cluster-timeout", zero=True)
        values.choice(self.strategy, "--strategy", STRATEGIES)
        if self.mixed_precision is not None:
            values.choice(self.mixed_precision, "--mixed-precision", tuple(MIXED_PRECISION))
        values.choice(str(self.jit_compile).lower(), "--jit-compile", tuple(JIT_COMPILE))
        if self.compile_cache not in (None, "none"):
            values.path_to_write(self.compile_cache, "--compile-cache", want="folder")
        if self.init_from is not None:
            values.path_to_read(self.init_from, "--init-from", want="folder")
        if self.data_dir is not None:
            values.path_to_read(self.data_dir, "--data-dir")
        if self.members is not None and (self.model != "him" or len(self.members) != 2):
            raise ConfigError("--members combines two runs (ESIM_RUN TREE_RUN) into the HIM ensemble: "
                              "use it with --model him")
        for member in self.members or ():
            values.path_to_read(member, "--members", want="folder")
        values.path_to_write(self.run_dir, "--run-dir", want="folder")
        if self.logdir is not None:
            values.path_to_write(self.logdir, "--logdir", want="folder")
        self.check_inputs()

    def check_inputs(self):
        """What can be checked of the data, the word vectors and the runs named before anything is read or
        downloaded (and before TensorFlow starts): a known data set or an existing path whose `--fields`,
        `--labels` and `--roles` parse, known vectors or an existing vector file, run directories.

        Raises:
            ConfigError: one line naming the option.
        """
        try:
            check_source(self.source, self.fields, self.labels, self.roles)
        except (DataUnavailableError, ValueError) as error:
            raise ConfigError(f"{'--data-dir' if self.data_dir else '--dataset'}: {error}"
                              if str(error).startswith("unknown") else str(error)) from None
        if self.embeddings != "none":
            try:
                check_vectors(self.embeddings)
            except DataUnavailableError as error:
                raise ConfigError(f"--embeddings: {error}") from None
        for option, run_dir in [("--init-from", self.init_from)] + [("--members", m) for m in self.members or ()]:
            if run_dir is not None:
                try:
                    load_record(run_dir)
                except (OSError, CorruptFileError) as error:
                    raise ConfigError(f"{option}: {error}") from None

    # Derived values ---------------------------------------------------------------------------------
    @property
    def source(self):
        """The data source: `data_dir` when given, else `dataset`."""
        return self.data_dir or self.dataset

    @property
    def jit(self):
        """`jit_compile` as Keras takes it: `"auto"`, True or False."""
        return JIT_COMPILE[str(self.jit_compile).lower()]

    @property
    def fit_verbose(self):
        """`verbose` as `fit` takes it: None (auto) is 1 (progress bar) on a terminal, else 2 (one line per
        epoch: no carriage returns and escape codes in a log file)."""
        if self.verbose is not None:
            return self.verbose
        return 1 if sys.stdout.isatty() else 2

    @property
    def random_vectors_dim(self):
        """The size of random word vectors (`embeddings="none"`): `embedding_dim`, or the papers' (`EMBEDDING_DIM`)."""
        return self.embedding_dim or EMBEDDING_DIM

    def identity(self):
        """The `config.json` entries a rerun must match to resume in the same run directory."""
        identity = {
            "model": self.model,
            "preset": self.settings.to_json(),
            "embeddings": self.embeddings,
            "data": {"source": self.source, "fields": self.fields, "labels": self.labels, "roles": self.roles,
                     "max_train_examples": self.max_train_examples, "max_eval_examples": self.max_eval_examples,
                     "shuffle": self.shuffle, "bucket": self.bucket},
            "seed": self.seed,
        }
        if self.embeddings == "none":
            identity["embedding_dim"] = self.random_vectors_dim
        if self.init_from:
            identity["init_from"] = os.path.abspath(self.init_from)
        return identity

    def to_json(self):
        """The whole configuration for `config.json`: the identity, then how the run was run."""
        options = {name: getattr(self, name) for name in self.option_names()}
        options["members"] = list(self.members) if self.members else None
        return {**self.identity(), "overrides": self.overrides, "mixed_precision": self.mixed_precision,
                "strategy": self.strategy, "options": options}


def parse_value(text):
    """Parses a `--set` value: a JSON literal when it is one, else the string itself.

    Args:
        text: the text after `=`.

    Returns:
        the parsed value (`"0.5"` -> 0.5, `"true"` -> True, `"null"` -> None, `"adam"` -> "adam").
    """
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_overrides(items):
    """Turns `["key=value", ...]` into a dict.

    Args:
        items: the `--set` arguments.

    Returns:
        `{key: parsed value}`.

    Raises:
        ConfigError: for an item without `=` or with an empty key.
    """
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key] = parse_value(value)
    return overrides


def _init_run_record(init_from):
    """The `RunRecord` of the `--init-from` run (None when it cannot be read: loading the run reports that
    later, with the reason)."""
    try:
        return load_record(init_from)
    except (OSError, ValueError, CorruptFileError):
        return None
