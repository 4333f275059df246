"""A reproduction's report, typed: what `zoo.reproduction.report.build` returns and `reproduce` hands back, read
by attribute, and the one module that turns it into the JSON of `reproduction.json` (`to_json`, the layout it
always had: a row carries the fields of its status, a claim those of its test).

```python
result = reproduce(paper, rows, spec, "repro")
for row in result.report.rows:
    row.id, row.status, row.verdict, row.measured.test if row.measured else None
claim = result.report.claims[0]
claim.verdict, claim.difference, claim.interval, claim.test       # "held", [low, high], "runs"
result.report.comparison.groups                                     # the `zoo.comparison` record
```
"""

import dataclasses
from typing import Optional

ROW_FIELDS = ("id", "printed", "name", "reported", "model", "settings", "members", "cited", "note")
RUN_FIELDS = ("trained", "status", "group", "runs", "seeds", "failed", "test_pairs", "departures", "measured",
              "difference", "reported_inside", "verdict")


@dataclasses.dataclass(frozen=True)
class Measured:
    """A row's measured figures, in percent: the seeds' mean test accuracy and its standard deviation, the
    intervals of one more run (the paper's one run is held against it), of the mean and of the items alone,
    the dev and training accuracy; params: trainable parameters outside the word vectors."""

    test: Optional[float]
    test_std: Optional[float]
    test_interval: Optional[list]
    test_mean_interval: Optional[list]
    test_items_interval: Optional[list]
    dev: Optional[float]
    train: Optional[float]
    params: Optional[int]

    def to_json(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Trained:
    """What a row's runs read and trained: `pairs` `{split: [counts]}`, `epochs` `[[seed, epochs run, best
    epoch]]`, the vocabulary sizes and the word vectors' coverages (`{"types", "tokens"}`)."""

    pairs: dict
    epochs: list
    vocabulary: list
    coverage: list

    def to_json(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ReportRow:
    """A row of the paper's table beside what was measured.

    Attributes:
        id, printed, name, reported, model, settings, members, cited, note: the paper's row (`reported`:
            `{column: figure}` as printed).
        status: "not runnable", "not selected", "not run" or "run"; verdict: the row's verdict in words.
        runs: the row's run directories (not run, run).
        trained, group, seeds, failed, test_pairs, departures, measured, difference, reported_inside: a row
            that ran: what its runs read and trained, its comparison group, its seeds, its failed runs, the test
            pairs scored, how it departs from the paper's conditions (`[what, this run, the paper's]`), its
            `Measured` figures, measured - reported, and whether the reported figure is inside one more run's
            interval (None: not comparable).
    """

    id: str
    printed: list
    name: str
    reported: dict
    model: Optional[str]
    settings: dict
    members: list
    cited: Optional[str]
    note: Optional[str]
    status: str
    verdict: str
    runs: Optional[list] = None
    trained: Optional[Trained] = None
    group: Optional[str] = None
    seeds: Optional[list] = None
    failed: Optional[list] = None
    test_pairs: Optional[int] = None
    departures: list = dataclasses.field(default_factory=list)
    measured: Optional[Measured] = None
    difference: Optional[float] = None
    reported_inside: Optional[bool] = None

    @property
    def ran(self):
        return self.status == "run"

    def to_json(self):
        data = {key: getattr(self, key) for key in ROW_FIELDS}
        if self.ran:
            data.update({key: getattr(self, key) for key in RUN_FIELDS})
            data.update(trained=self.trained.to_json(), measured=self.measured.to_json())
        elif self.status == "not run":
            data.update(status=self.status, runs=self.runs, verdict=self.verdict)
        else:
            data.update(status=self.status, verdict=self.verdict)
        return data


@dataclasses.dataclass(frozen=True)
class TestedClaim:
    """One of the paper's claimed orderings, tested on the measured rows.

    Attributes:
        kind: "better" (A > B) or "same" (A ≈ B); a, b: the rows; claim, quote, where: the claim in words and as
            the paper prints it; reported_difference: the paper's A - B (percent).
        verdict: "held", "not held", "not resolved" (with the seeds that would resolve it), or "not tested: ...".
        difference, interval, p_value: the measured A - B in percent, its interval and p-value by `test`
            ("runs": the run-level test, Holm-adjusted `p_value_holm`, `seeds_needed`; "items only" with one
            seed); items_interval: the paired bootstrap's; mcnemar: the `McNemar` tests per seed (A, B as the
            comparison paired them). None where the claim was not tested.
    """

    __test__ = False  # not a pytest class

    kind: str
    a: str
    b: str
    claim: str
    quote: str
    where: str
    reported_difference: Optional[float]
    verdict: str
    difference: Optional[float] = None
    interval: Optional[list] = None
    p_value: Optional[float] = None
    mcnemar: tuple = ()
    test: Optional[str] = None
    items_interval: Optional[list] = None
    p_value_holm: Optional[float] = None
    seeds_needed: Optional[int] = None

    @property
    def tested(self):
        return self.test is not None

    def to_json(self):
        data = {key: getattr(self, key) for key in ("kind", "a", "b", "claim", "quote", "where", "reported_difference")}
        if self.tested:
            data.update(difference=self.difference, interval=self.interval, p_value=self.p_value,
                        mcnemar=[test.to_json() for test in self.mcnemar], test=self.test,
                        items_interval=self.items_interval)
            if self.test == "runs":
                data.update(p_value_holm=self.p_value_holm, seeds_needed=self.seeds_needed)
        data["verdict"] = self.verdict
        return data


@dataclasses.dataclass(frozen=True)
class Conditions:
    """How this reproduction departs from the paper's conditions (`[what, this run, the paper's]`), whether its
    levels can be held against the paper's (no departure), and the options and settings every run had."""

    departures: list
    levels_comparable: bool
    train: dict
    settings: dict

    def to_json(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ReproductionReport:
    """A paper's table reproduced (`zoo.reproduction.report.build`).

    Attributes:
        paper, citation, data, vectors, tables: the paper (its key, its citation, and as `papers/*.json` gives
            its data, word vectors and tables).
        seeds, directory: the seeds of every row and the reproduction directory.
        confidence, resamples: of the intervals and the bootstrap.
        rows: a `ReportRow` per row of the paper; conditions: the `Conditions`; claims: a `TestedClaim` per claim.
        comparison: the `zoo.comparison.records.Comparison` of the measured rows' runs.
        notes: the paper's notes.
    """

    paper: str
    citation: str
    data: dict
    vectors: dict
    tables: dict
    seeds: list
    directory: str
    confidence: float
    resamples: int
    rows: tuple
    conditions: Conditions
    claims: tuple
    comparison: object
    notes: tuple

    def row(self, row_id):
        """The `ReportRow` of `row_id`."""
        return next(row for row in self.rows if row.id == row_id)

    def failed_rows(self):
        """The ids of the rows some of whose runs failed."""
        return [row.id for row in self.rows if row.failed or row.verdict.startswith("failed")]

    def to_json(self):
        return {"paper": self.paper, "citation": self.citation, "data": self.data, "vectors": self.vectors,
                "tables": self.tables, "seeds": list(self.seeds), "directory": self.directory,
                "confidence": self.confidence, "resamples": self.resamples,
                "rows": [row.to_json() for row in self.rows], "conditions": self.conditions.to_json(),
                "claims": [claim.to_json() for claim in self.claims], "comparison": self.comparison.to_json(),
                "notes": list(self.notes)}


@dataclasses.dataclass(frozen=True)
class ReproductionResult:
    """What `zoo.reproduction.reproduce.reproduce` did: this process's `role` in the sweep ("chief", "worker"
    or "alone"), the sweep's trials (`zoo.comparison.records.Trial`s) and folder, and, except on a worker, the
    `report` and the `paths` of its files (`{"markdown", "json", "chart", "logs"}`)."""

    role: str
    trials: tuple
    sweep_dir: str
    report: Optional[ReproductionReport] = None
    paths: Optional[dict] = None
