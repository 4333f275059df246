"""The papers' result tables as data: `papers/KEY.json`, read into `Paper`, `Row` and `Claim`.

Each file holds one paper: its citation, the data and word vectors it used, its tables (caption, the
header line as printed, the columns the zoo reads), its rows and the orderings it claims. A row is
printed as in the paper (per table: a row of Chen et al. is in both their tables), with the reported
figures as printed (`size`, `params` as text such as "252k" or "1.9M"; `train`, `dev`, `test` in
percent, null where the table prints "-"), and either what makes it (a registered `model`, its
ablation `settings`, or the `members` of an ensemble) or why it cannot run here (`not_runnable`).
Rows that a paper cites from earlier papers name them (`cited`) and run with those models' presets.

```python
from zoo.reproduction.tables import load_paper, paper_keys
paper = load_paper("rocktaschel2016")
paper.row("wbw").reported["test"], paper.row("wbw").model     # 83.5, 'rocktaschel_wbw'
```

`scripts/check_paper_tables.py PAPERS_DIR` checks every figure and quotation against the papers' text.
"""

import dataclasses
import json
import os
import re
from typing import Optional

from zoo.errors import UserError

PAPERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "papers")
COLUMNS = ("size", "params", "train", "dev", "test")
CLAIM_KINDS = ("better", "similar")  # "a beats b"; "a and b do not differ" (a test can only refute it)


class PaperError(UserError):
    """An unknown paper or row (one line, exit status 2)."""


@dataclasses.dataclass(frozen=True)
class Unit:
    """What the sweep trains for a row: a registered model with its settings (the run directory's name
    comes from both: `luo_matrix-bilinear=false`)."""

    model: str
    settings: tuple = ()  # ((key, value), ...), sorted: hashable

    @classmethod
    def of(cls, entry):
        return cls(entry["model"], tuple(sorted((entry.get("settings") or {}).items())))

    @property
    def name(self):
        parts = [self.model] + [f"{key}={json.dumps(value, separators=(',', ':')).strip(chr(34))}"
                                for key, value in self.settings]
        return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", "-".join(parts))

    def overrides(self):
        return dict(self.settings)


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of a paper's table(s).

    Attributes:
        id: the row's name on the command line (`--rows`), unique in its paper.
        printed: `{table: the row's name as printed there}`.
        reported: `{column: figure}` as printed (`params` and `size` text, accuracies in percent, None: "-").
        model, settings: the registered model and the settings that make the row (None when not runnable).
        members: the units of an ensemble row (`model` is then "him"), each trained apart, then combined.
        cited: the earlier paper the row's figures come from, where the paper quotes one.
        not_runnable: why the zoo cannot train the row (no such model, an ablation switch it lacks).
        note: what else a reader of the row should know.
    """

    id: str
    printed: dict
    reported: dict
    model: Optional[str] = None
    settings: dict = dataclasses.field(default_factory=dict)
    members: tuple = ()
    cited: Optional[str] = None
    not_runnable: Optional[str] = None
    note: Optional[str] = None

    @property
    def name(self):
        """The row's name as first printed."""
        return next(iter(self.printed.values()))

    @property
    def runnable(self):
        return self.not_runnable is None

    def units(self):
        """The units the sweep trains for this row: its members, or the row itself."""
        if self.members:
            return [Unit.of(member) for member in self.members]
        return [Unit.of({"model": self.model, "settings": self.settings})]

    def params_m(self):
        """The reported |θ|_M as a number (`"252k"` -> 252000), or None."""
        return parse_count(self.reported.get("params"))


@dataclasses.dataclass(frozen=True)
class Claim:
    """An ordering the paper claims between two rows: `a` beats `b` (`better`), or they do not differ
    (`similar`), with the sentence that says so and where."""

    kind: str
    a: str
    b: str
    quote: str
    where: str

    def describe(self, paper):
        a, b = paper.label(self.a), paper.label(self.b)
        return f"{a} > {b}" if self.kind == "better" else f"{a} ≈ {b}"


@dataclasses.dataclass(frozen=True)
class Paper:
    """A paper's tables: its rows, claims, data and word vectors (see the module's docstring)."""

    key: str
    citation: str
    text: str
    data: dict
    vectors: dict
    tables: dict
    rows: tuple
    claims: tuple
    notes: tuple = ()

    def row(self, row_id):
        for row in self.rows:
            if row.id == row_id:
                return row
        raise PaperError(f"{self.key}: no row {row_id!r}; rows: {', '.join(r.id for r in self.rows)}")

    def label(self, row_id):
        """The row's printed name, with its size where the paper prints the name on several rows
        ("mLSTM (d=300)")."""
        row = self.row(row_id)
        if sum(r.name == row.name for r in self.rows) < 2 or not row.reported.get("size"):
            return row.name
        table = self.tables[next(iter(row.printed))]
        return f"{row.name} ({table.get('size_label', 'size')}={row.reported['size']})"

    def select(self, wanted=None):
        """The rows asked for (ids; None: every row), in the paper's order.

        Raises:
            PaperError: an id that names no row.
        """
        if not wanted:
            return list(self.rows)
        chosen = {self.row(row_id).id for row_id in wanted}
        return [row for row in self.rows if row.id in chosen]


def paper_keys():
    """The papers there are tables of, sorted."""
    return sorted(name[:-5] for name in os.listdir(PAPERS_DIR) if name.endswith(".json"))


def load_paper(key, folder=PAPERS_DIR):
    """The `Paper` of `papers/KEY.json`.

    Raises:
        PaperError: an unknown paper.
    """
    path = os.path.join(folder, f"{key}.json")
    if not re.fullmatch(r"[a-z0-9_]+", str(key)) or not os.path.exists(path):
        raise PaperError(f"unknown paper {key!r}; papers: {', '.join(paper_keys())}")
    with open(path, encoding="utf-8") as file:
        entries = json.load(file)
    rows = tuple(Row(id=r["id"], printed=r["printed"], reported=r["reported"], model=r.get("model"),
                     settings=r.get("settings") or {}, members=tuple(r.get("members") or ()), cited=r.get("cited"),
                     not_runnable=r.get("not_runnable"), note=r.get("note")) for r in entries["rows"])
    claims = tuple(Claim(c["kind"], c["a"], c["b"], c["quote"], c["where"]) for c in entries["claims"])
    return Paper(key=entries["paper"], citation=entries["citation"], text=entries["text"], data=entries["data"],
                 vectors=entries["vectors"], tables=entries["tables"], rows=rows, claims=claims,
                 notes=tuple(entries.get("notes") or ()))


def parse_count(text):
    """A parameter count as printed (`"221k"`, `"1.9M"`, `"15.0M"`) as a number; None for None."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9.]+)\s*([kKmM]?)\s*", str(text))
    if not match:
        raise ValueError(f"not a parameter count: {text!r}")
    scale = {"": 1, "k": 1e3, "m": 1e6}[match.group(2).lower()]
    return int(round(float(match.group(1)) * scale))


def format_count(count):
    """A parameter count as the papers print it: 252,000 -> "252k", 1,900,000 -> "1.9M"."""
    if count is None:
        return "-"
    if count >= 1e6:
        return f"{count / 1e6:.1f}M"
    if count >= 1e3:
        return f"{count / 1e3:.0f}k"
    return str(count)


def structure_problems(paper):
    """What is wrong with a paper's data, as lines (empty when nothing is): ids, tables, columns, claims,
    and for every runnable row (and member) a registered model whose settings `nli-zoo train` accepts.
    """
    from zoo.errors import ConfigError
    from zoo.registry import get_preset
    from zoo.training.config import RunConfig

    problems = []
    ids = [row.id for row in paper.rows]
    if len(set(ids)) != len(ids):
        problems.append(f"{paper.key}: row ids repeat")
    for row in paper.rows:
        where = f"{paper.key} row {row.id}"
        for table, name in row.printed.items():
            if table not in paper.tables:
                problems.append(f"{where}: printed in {table!r}, which the paper's tables do not list")
            else:
                missing = [c for c in paper.tables[table]["columns"] if c not in row.reported]
                if missing:
                    problems.append(f"{where}: no reported {', '.join(missing)} (a column of {table})")
        unknown = set(row.reported) - set(COLUMNS)
        if unknown:
            problems.append(f"{where}: unknown columns {sorted(unknown)}")
        if row.runnable == bool(row.model is None):
            problems.append(f"{where}: give either a model or a not_runnable reason")
            continue
        if not row.runnable:
            continue
        if row.members and row.model != "him":
            problems.append(f"{where}: only him combines members")
        for unit in row.units() + ([Unit(row.model)] if row.members else []):
            try:
                preset = get_preset(unit.model)
                RunConfig.create(unit.model, overrides=unit.overrides(), dataset="snli_sample", embeddings="none")
            except (ValueError, ConfigError) as error:
                problems.append(f"{where}: {unit.name}: {error}")
                continue
            if not row.cited and not row.members and preset.data.embeddings != paper.vectors["name"]:
                problems.append(f"{where}: {unit.model}'s preset reads {preset.data.embeddings}, the paper "
                                f"{paper.vectors['name']}")
    for claim in paper.claims:
        if claim.kind not in CLAIM_KINDS or claim.a not in ids or claim.b not in ids or claim.a == claim.b:
            problems.append(f"{paper.key}: claim {claim.kind} {claim.a} {claim.b}: unknown kind or rows")
    return problems
