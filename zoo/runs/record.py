"""A run read back typed as it was written: `RunRecord` is what `config.json` holds, and this module is the
one place that reads and writes that file (and checks the shape of `results.json`).

`config.json` records a run: what training was asked for (`zoo.training.config.RunConfig.to_json()`: the
model, its paper preset with the overrides, the data, the seed, how it ran) and what training derived (the
vocabulary size, the word vectors' size and which of them train, the tokenizer, the labels, the
vocabulary's report, the run it started from). Everything after training (loading, predictors, export,
presets, the demo, the diagnostics, compare) reads the typed `RunRecord`, never the dict:

```python
from zoo.runs.record import load_record
record = load_record("runs/esim")
record.model, record.settings.data.max_premise_length, record.settings.train.batch_size, record.seed
```

A damaged or hand-edited file is refused in one line naming the file and the field (`RunFileError`), before
anything is built from it. Runs written by older versions load as they were trained: the one conversion is
here (`LEGACY_MODEL_SETTINGS`, missing optional entries).
"""

import dataclasses
import os
from typing import Optional

from zoo import fileio
from zoo.constants import LABELS
from zoo.errors import ConfigError
from zoo.registry import get_preset, list_models
from zoo.runs.fields import (Fields, RunFileError, boolean, json_object, labels, optional_text, short, text,
                             text_list, wrong)
from zoo.settings import RunSettings, values

CONFIG_FILE = "config.json"
RESULTS_FILE = "results.json"
CONFIG_REMEDY = "it holds the run's settings: repair it by hand, or train the run again with --overwrite"
RESULTS_REMEDY = "delete it: rerunning train.py on the run evaluates its best weights again and writes it"
TUNABLE_WORDS = ("all", "none", "oov")

# Model settings added after runs were written, with the value those runs were trained with: a run whose
# config lacks one gets this value, not the current preset's.
LEGACY_MODEL_SETTINGS = {"classifier_activation": "linear", "complete_trees": "carried"}


@dataclasses.dataclass(frozen=True)
class DataSource:
    """Where a run's data came from (`config.json`'s `data`): the corpus, how its files were read, the caps."""

    source: str
    fields: Optional[str] = None
    labels: Optional[str] = None
    roles: Optional[str] = None
    max_train_examples: Optional[int] = None
    max_eval_examples: Optional[int] = None
    shuffle: bool = True
    bucket: bool = True

    def to_json(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class InitFrom:
    """The finished run a fine-tuned run started from (`--init-from`)."""

    run_dir: str
    model: str
    data: Optional[DataSource] = None
    test_accuracy: Optional[float] = None
    weights_sha256: Optional[str] = None  # of its best.weights.h5 when this run started from it

    def to_json(self):
        written = {"run_dir": self.run_dir, "model": self.model,
                   "data": None if self.data is None else self.data.to_json(), "test_accuracy": self.test_accuracy}
        if self.weights_sha256 is not None:
            written["weights_sha256"] = self.weights_sha256
        return written


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run's `config.json`, typed.

    Attributes:
        model: the registered model name.
        settings: the paper preset with the run's overrides (`zoo.settings.RunSettings`; `"preset"` in the file).
        embeddings: the word vectors (a name, a path or `"none"`).
        data: where the data came from (`DataSource`; None for a record without it).
        seed: the random seed.
        vocabulary_size, embedding_dim: the embedding table's shape.
        tunable_words, num_tunable: which word vectors train (`"all"`, `"none"` or `"oov"`, and how many).
        lowercase: the tokenizer's setting (`zoo.data.tokenizer.Tokenizer(lowercase=...)`).
        labels: the label names by id.
        vocabulary: the vocabulary's report (training words, pretrained words, rescued tokens), or None.
        init_from: the run this one started from (`InitFrom`), or None.
        members: the member runs of a HIM ensemble, or None.
        overrides, mixed_precision, strategy, options: how the run was asked for and run (as written).
        manifest: whether the run keeps `manifest.json`, the SHA-256 of its files (`zoo.runs.manifest`; runs
            written before the zoo kept one have none).
    """

    model: str
    settings: RunSettings
    vocabulary_size: int
    embedding_dim: int
    tunable_words: str
    num_tunable: int
    lowercase: bool
    embeddings: str = "none"
    data: Optional[DataSource] = None
    seed: int = 0
    labels: tuple = LABELS
    vocabulary: Optional[dict] = None
    init_from: Optional[InitFrom] = None
    members: Optional[tuple] = None
    overrides: dict = dataclasses.field(default_factory=dict)
    mixed_precision: Optional[str] = None
    strategy: str = "auto"
    options: dict = dataclasses.field(default_factory=dict)
    manifest: bool = False

    @property
    def tokenizer_config(self):
        """The run's `Tokenizer.get_config()`."""
        return {"lowercase": self.lowercase}

    @property
    def data_settings(self):
        """The run's `DataSettings` (maximum lengths, OOV rule, vocabulary size)."""
        return self.settings.data

    # The file's format ------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, value, path=CONFIG_FILE):
        """The record of a `config.json`'s content, checked field by field.

        Raises:
            RunFileError: one line naming `path`, the field and what is wrong with it.
        """
        fields = Fields(value, path, CONFIG_REMEDY)
        model = fields.get("model", lambda v, n: values.choice(v, n, list_models()))
        preset = fields.get("preset", lambda v, n: v if isinstance(v, dict) else wrong(n, "must be an object"))
        settings = fields.check("preset", lambda _, n: _settings_of(model, preset, n))
        data = fields.get("data", _data_source, None)
        init_from = fields.get("init_from", _init_from, None)
        tokenizer = fields.get("tokenizer", lambda v, n: v if isinstance(v, dict) and isinstance(
            v.get("lowercase"), bool) else wrong(n, 'must be {"lowercase": true or false}'))
        return cls(
            model=model, settings=settings, data=data, init_from=init_from, lowercase=tokenizer["lowercase"],
            vocabulary_size=fields.get("vocabulary_size", lambda v, n: values.whole(v, n, minimum=3)),
            embedding_dim=fields.get("embedding_dim", values.count),
            tunable_words=fields.get("tunable_words", lambda v, n: values.choice(v, n, TUNABLE_WORDS)),
            num_tunable=fields.get("num_tunable", lambda v, n: values.count(v, n, zero=True)),
            embeddings=fields.get("embeddings", text, settings.data.embeddings),
            seed=fields.get("seed", values.seed, 0),
            labels=tuple(fields.get("labels", labels, LABELS)),
            vocabulary=fields.get("vocabulary", json_object, None),
            members=fields.get("members", lambda v, n: None if v is None else tuple(text_list(v, n)), None),
            overrides=fields.get("overrides", json_object, None) or {},
            mixed_precision=fields.get("mixed_precision", optional_text, None),
            strategy=fields.get("strategy", text, "auto"),
            options=fields.get("options", json_object, None) or {},
            manifest=fields.get("manifest", boolean, False))

    def to_json(self):
        """The `config.json` content (the format the zoo has always written)."""
        written = {
            "model": self.model, "preset": self.settings.to_json(), "embeddings": self.embeddings,
            "data": None if self.data is None else self.data.to_json(), "seed": self.seed,
            "overrides": dict(self.overrides), "mixed_precision": self.mixed_precision, "strategy": self.strategy,
            "options": dict(self.options), "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim, "tunable_words": self.tunable_words, "num_tunable": self.num_tunable,
            "tokenizer": self.tokenizer_config, "labels": list(self.labels), "vocabulary": self.vocabulary,
        }
        if self.init_from is not None:
            written["init_from"] = self.init_from.to_json()
        if self.members is not None:
            written["members"] = list(self.members)
        if self.manifest:
            written["manifest"] = True
        return written

    def identity(self):
        """The entries a rerun must match to resume (`zoo.training.config.RunConfig.identity`'s keys)."""
        identity = {"model": self.model, "preset": self.settings.to_json(), "embeddings": self.embeddings,
                    "data": None if self.data is None else self.data.to_json(), "seed": self.seed}
        if self.embeddings == "none":
            identity["embedding_dim"] = self.embedding_dim
        if self.init_from is not None:
            identity["init_from"] = self.init_from.run_dir
        return identity


def load_record(run_dir):
    """The `RunRecord` of a run directory.

    Raises:
        FileNotFoundError: `run_dir` has no `config.json` (not a run directory).
        zoo.fileio.CorruptFileError: the file is not JSON (`RunFileError`: not what the zoo wrote), one line.
    """
    path = os.path.join(run_dir, CONFIG_FILE)
    value = fileio.read_json(path, remedy=CONFIG_REMEDY)
    if value is None:
        raise FileNotFoundError(f"{run_dir!r} is not a run directory (no {CONFIG_FILE})")
    return RunRecord.from_json(value, path)


def save_record(run_dir, record):
    """Writes `record` as the run's `config.json`, atomically (created with the folder when missing)."""
    os.makedirs(run_dir, exist_ok=True)
    fileio.write_json(os.path.join(run_dir, CONFIG_FILE), record.to_json())


def _settings_of(model, preset, name):
    """The run's `RunSettings`: the file's preset, with the settings an older run lacks at their legacy value,
    and no model setting the model does not take."""
    section = dict(preset.get("model") or {}) if isinstance(preset.get("model"), dict) else preset.get("model")
    if isinstance(section, dict):
        known = get_preset(model).model
        for key, value in LEGACY_MODEL_SETTINGS.items():
            if key in known and key not in section:
                section[key] = value
        unknown = sorted(set(section) - set(known))
        if unknown:
            wrong(f"{name}.model", f"has {unknown[0]!r}, which is not a setting of model {model!r} "
                                    f"(its settings: {', '.join(sorted(known))})")
    try:
        return RunSettings.of({**preset, "model": section})
    except ConfigError as error:
        raise ConfigError(f"{name}: {error}") from None


def _data_source(value, name):
    if value is None:
        return None
    if isinstance(value, str):  # older runs name only the source
        return DataSource(source=value)
    if not isinstance(value, dict):
        wrong(name, f"must be an object, got {short(value)}")
    known = {f.name for f in dataclasses.fields(DataSource)}
    if not isinstance(value.get("source"), str):
        wrong(f"{name}.source", "must be text")
    for key in ("max_train_examples", "max_eval_examples"):
        if value.get(key) is not None:
            values.count(value[key], f"{name}.{key}")
    return DataSource(**{k: v for k, v in value.items() if k in known})


def _init_from(value, name):
    if value is None:
        return None
    if isinstance(value, str):  # the path alone, as a rerun's identity gives it
        return InitFrom(run_dir=value, model="")
    if not isinstance(value, dict) or not isinstance(value.get("run_dir"), str):
        wrong(name, f"must be an object naming the run_dir, got {short(value)}")
    accuracy = value.get("test_accuracy")
    digest = value.get("weights_sha256")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
        wrong(f"{name}.weights_sha256", f"must be a SHA-256 in hex, got {short(digest)}")
    return InitFrom(run_dir=value["run_dir"], model=str(value.get("model") or ""),
                    data=_data_source(value.get("data"), f"{name}.data"), weights_sha256=digest,
                    test_accuracy=None if accuracy is None else float(values.number(accuracy, f"{name}.test_accuracy",
                                                                                   zero=True)))
