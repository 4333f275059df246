"""A comparison of runs, typed: what `zoo.comparison.report.compare` returns, read by attribute, and the one
module that turns it into the JSON of `comparison.json` (`Comparison.to_json`) and back (`Comparison.from_json`).

```python
comparison = zoo.compare(["sweeps/small"])
for group in comparison.groups:
    group.label, group.test_accuracy.mean, group.test_accuracy.mean_interval, [run.seed for run in group.runs]
for pair in comparison.tested_pairs():
    pair.difference, pair.p_value, pair.runs.p_value if pair.runs else None, [m.p_value for m in pair.mcnemar]
```

The JSON keeps the layout it always had: a group's `test_accuracy` carries its items' interval (null without
per-item predictions) and, with them, its interval method and the intervals of the mean and of one more run;
its classes carry their intervals only with per-item predictions; a pair not paired carries why (`skipped`)
and nothing else; the Holm-adjusted p-values appear where several pairs were tested.
"""

import dataclasses
from typing import Optional

SPREAD_KEYS = ("mean", "std", "n")
ITEM_KEYS = ("interval", "interval_method")
RUN_INTERVAL_KEYS = ("mean_interval", "prediction_interval", "seed_std", "item_std", "df", "runs")


def _pick(data, keys):
    return {key: data.get(key) for key in keys}


@dataclasses.dataclass(frozen=True)
class Accuracy:
    """An accuracy over a group's runs: their mean, standard deviation (None for one run) and number, and,
    where the runs kept per-item predictions, its intervals.

    Attributes:
        mean, std, n: over the runs (`zoo.comparison.statistics.spread`).
        interval, interval_method: the items-only bootstrap interval of the seeds' mean ("percentile", or
            "wilson" where every item was scored alike).
        mean_interval, prediction_interval: seeds and items together, where the mean of many runs and where
            one more run would fall (None with one run); seed_std, item_std, df, runs: what they rest on
            (`statistics.run_intervals`). Test accuracy only.
    """

    mean: Optional[float] = None
    std: Optional[float] = None
    n: int = 0
    interval: Optional[list] = None
    interval_method: Optional[str] = None
    mean_interval: Optional[list] = None
    prediction_interval: Optional[list] = None
    seed_std: Optional[float] = None
    item_std: Optional[float] = None
    df: Optional[float] = None
    runs: Optional[int] = None

    @classmethod
    def of(cls, data):
        return cls(**{key: data.get(key) for key in SPREAD_KEYS + ITEM_KEYS + RUN_INTERVAL_KEYS if key in data})

    def to_json(self, keys):
        return {key: getattr(self, key) for key in keys}


@dataclasses.dataclass(frozen=True)
class GroupRun:
    """One run of a group: its folder, seed, test and dev accuracy, best epoch and epochs trained."""

    run_dir: str
    seed: Optional[int]
    test_accuracy: Optional[float]
    dev_accuracy: Optional[float]
    best_epoch: Optional[int]
    epochs_run: Optional[int]

    def to_json(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Group:
    """Runs that differ only by their seed.

    Attributes:
        number: its place in the table (1-based); label: its settings less the seed; model: the model.
        runs: its `GroupRun`s; examples, items: the test pairs scored and their digest.
        test_accuracy, dev_accuracy: `Accuracy`; best_epochs: each run's; per_class: `{label: Accuracy}`.
        per_item: whether every run kept its per-item predictions (then the intervals and the pairings).
        values: per test item, the share of the runs that got it right (None without per-item predictions;
            not written).
    """

    number: int
    label: str
    model: str
    runs: tuple
    examples: Optional[int]
    items: Optional[str]
    test_accuracy: Accuracy
    dev_accuracy: Accuracy
    best_epochs: tuple
    per_class: dict
    per_item: bool = True
    values: Optional[object] = dataclasses.field(default=None, repr=False, compare=False)

    def to_json(self):
        test_keys = SPREAD_KEYS + (("interval", "interval_method") + RUN_INTERVAL_KEYS if self.per_item
                                   else ("interval",))
        class_keys = SPREAD_KEYS + (ITEM_KEYS if self.per_item else ())
        return {"number": self.number, "label": self.label, "model": self.model,
                "runs": [run.to_json() for run in self.runs], "examples": self.examples, "items": self.items,
                "test_accuracy": self.test_accuracy.to_json(test_keys),
                "dev_accuracy": self.dev_accuracy.to_json(SPREAD_KEYS), "best_epochs": list(self.best_epochs),
                "per_class": {name: accuracy.to_json(class_keys) for name, accuracy in self.per_class.items()}}

    @classmethod
    def from_json(cls, data):
        return cls(number=data["number"], label=data["label"], model=data["model"],
                   runs=tuple(GroupRun(**run) for run in data["runs"]), examples=data.get("examples"),
                   items=data.get("items"), test_accuracy=Accuracy.of(data["test_accuracy"]),
                   dev_accuracy=Accuracy.of(data["dev_accuracy"]), best_epochs=tuple(data["best_epochs"]),
                   per_class={name: Accuracy.of(c) for name, c in data["per_class"].items()},
                   per_item="interval_method" in data["test_accuracy"])


@dataclasses.dataclass(frozen=True)
class RunTest:
    """The test of a pair whose unit is the run (seeds and items: `statistics.run_level_test`).

    Attributes:
        difference, interval, p_value, df: of mean(A) - mean(B); p_value_holm: Holm-adjusted over the pairs
            (None with one pair).
        seed_std, item_std, runs: what it rests on ([A, B]); borrowed: a group of one run borrowed the other's
            seed spread; seeds_needed: seeds per group to resolve the difference (None: none would).
    """

    difference: float
    interval: list
    p_value: float
    df: float
    seed_std: list
    item_std: float
    runs: list
    borrowed: bool
    seeds_needed: Optional[int]
    p_value_holm: Optional[float] = None

    def to_json(self):
        data = dataclasses.asdict(self)
        if self.p_value_holm is None:
            del data["p_value_holm"]
        return data


@dataclasses.dataclass(frozen=True)
class McNemar:
    """McNemar's exact test of two runs of the same seed: items only A / only B got right, its p-value (and
    Holm's over the pairs tested on those seeds), the seeds `[a, b]`."""

    a_only: int
    b_only: int
    p_value: float
    seeds: list
    p_value_holm: Optional[float] = None

    def to_json(self):
        data = dataclasses.asdict(self)
        if self.p_value_holm is None:
            del data["p_value_holm"]
        return data


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two groups tested against each other on the same test items.

    Attributes:
        a, b, a_label, b_label: the groups' numbers and labels.
        skipped: why they were not paired (None: tested; then no other figure is set).
        difference, interval, p_value, p_below_floor: the paired bootstrap over the items of A - B (the
            p-value below the bootstrap's floor where no resample crossed 0); p_value_holm: Holm's over the
            pairs (None with one pair).
        runs: the `RunTest` (None with one run a side); mcnemar: a `McNemar` per seed.
    """

    a: int
    b: int
    a_label: str
    b_label: str
    skipped: Optional[str] = None
    difference: Optional[float] = None
    interval: Optional[list] = None
    p_value: Optional[float] = None
    p_below_floor: bool = False
    runs: Optional[RunTest] = None
    mcnemar: tuple = ()
    p_value_holm: Optional[float] = None

    @property
    def tested(self):
        return self.skipped is None

    def labels(self):
        return self.a_label, self.b_label

    def to_json(self):
        data = {"a": self.a, "b": self.b, "a_label": self.a_label, "b_label": self.b_label}
        if not self.tested:
            return {**data, "skipped": self.skipped}
        data.update(difference=self.difference, interval=self.interval, p_value=self.p_value,
                    p_below_floor=self.p_below_floor, runs=self.runs.to_json() if self.runs else None,
                    mcnemar=[test.to_json() for test in self.mcnemar])
        if self.p_value_holm is not None:
            data["p_value_holm"] = self.p_value_holm
        return data

    @classmethod
    def from_json(cls, data):
        head = {key: data[key] for key in ("a", "b", "a_label", "b_label")}
        if "skipped" in data:
            return cls(**head, skipped=data["skipped"])
        return cls(**head, difference=data["difference"], interval=data["interval"], p_value=data["p_value"],
                   p_below_floor=data.get("p_below_floor", False),
                   runs=RunTest(**data["runs"]) if data.get("runs") else None,
                   mcnemar=tuple(McNemar(**test) for test in data.get("mcnemar", ())),
                   p_value_holm=data.get("p_value_holm"))


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Finished runs compared, seeds grouped (`zoo.comparison.report.compare`).

    Attributes:
        confidence, resamples: of the intervals and the bootstrap.
        groups: the `Group`s, in the table's order; pairs: the `Pair`s (tested or skipped).
        diagnostics: `{row: {group label: mean accuracy}}` of the runs' diagnostics reports.
        notes: what the table cannot show (runs left out, groups without per-item predictions).
        runs: the run directories compared (set by `nli-zoo compare`; None: not written).
    """

    confidence: float
    resamples: int
    groups: tuple
    pairs: tuple
    diagnostics: dict
    notes: tuple
    runs: Optional[tuple] = None

    def group(self, label):
        """The group of `label` (None: none)."""
        return next((group for group in self.groups if group.label == label), None)

    def tested_pairs(self):
        return [pair for pair in self.pairs if pair.tested]

    def pair_of(self, a_label, b_label):
        """The pair of the two labels, in either order (None: they were not paired)."""
        return next((pair for pair in self.pairs if pair.labels() in ((a_label, b_label), (b_label, a_label))), None)

    def to_json(self):
        data = {"confidence": self.confidence, "resamples": self.resamples,
                "groups": [group.to_json() for group in self.groups], "pairs": [pair.to_json() for pair in self.pairs],
                "diagnostics": self.diagnostics, "notes": list(self.notes)}
        if self.runs is not None:
            data["runs"] = list(self.runs)
        return data

    @classmethod
    def from_json(cls, data):
        return cls(confidence=data["confidence"], resamples=data["resamples"],
                   groups=tuple(Group.from_json(group) for group in data["groups"]),
                   pairs=tuple(Pair.from_json(pair) for pair in data["pairs"]), diagnostics=data["diagnostics"],
                   notes=tuple(data["notes"]), runs=tuple(data["runs"]) if "runs" in data else None)


@dataclasses.dataclass(frozen=True)
class Trial:
    """One trial of a sweep: its number, KerasTuner's status ("COMPLETED", "FAILED", ...), its values (the
    settings it tried), its runs (one per seed), the mean dev and test accuracy of its runs (completed), or why it
    failed (`error`), and its seconds (a worker's own trials)."""

    trial: str
    status: str
    values: dict
    runs: list
    dev_accuracy: Optional[float] = None
    test_accuracy: Optional[float] = None
    error: Optional[str] = None
    seconds: Optional[float] = None

    @property
    def completed(self):
        return self.status == "COMPLETED"

    @property
    def failed(self):
        return self.status == "FAILED"


@dataclasses.dataclass(frozen=True)
class SweepSummary:
    """What `zoo.comparison.tuner.run_sweep` did: this process's role ("alone", "chief" or "worker") and the
    `Trial`s of the sweep (a worker: its own), in trial order."""

    role: str
    trials: tuple

    def failed(self):
        return [trial for trial in self.trials if trial.failed]
