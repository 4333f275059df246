"""What a reproduction trains: the selected rows' units (a registered model and the row's settings) x seeds,
as a sweep (`ReproductionSpec`, a `SweepSpec` whose grid axis is the unit), and how the runs depart from
the paper's data, word vectors and settings (`departures`).

The reproduction directory:
```
DIR/runs/UNIT-seed=N              the run directories (an ensemble row's: him-of-A+B-seed=N), shared by every
                                  selection of rows and every paper reproduced into DIR
DIR/sweeps/PAPER-DIGEST/          the sweep of one selection (KerasTuner's state, sweep.json): rerun the same
                                  command to resume it; another selection is another sweep over the same runs
DIR/reports/PAPER/                the report (reproduction.md, .json, .png, TensorBoard logs/)
```
"""

import dataclasses
import hashlib
import json
import os

from zoo.constants import EMBEDDING_DIM
from zoo.comparison.spec import SpecError, SweepSpec, entries_from_flags
from zoo.reproduction.tables import PaperError, Unit

RUNS_DIR, SWEEPS_DIR, REPORTS_DIR = "runs", "sweeps", "reports"
ENTRIES = {RUNS_DIR, SWEEPS_DIR, REPORTS_DIR}


@dataclasses.dataclass(frozen=True)
class ReproductionSpec(SweepSpec):
    """A sweep over the units of a paper's rows: one grid axis, the unit (`luo_matrix-bilinear=false`),
    times the seeds; the settings of `--set` apply to every run, each unit's own on top (they are the
    row's ablation switches, which `--set` may not change)."""

    units: tuple = ()

    @classmethod
    def of(cls, rows, seeds=None, settings=(), **train):
        """The spec of `rows` (runnable `Row`s) with `nli-zoo reproduce`'s flags.

        Args:
            rows: the rows to train (their units, each once).
            seeds: "N" or "A,B,..." (as `nli-zoo sweep --seeds`). settings: `--set KEY=VALUE` items.
            **train: the training options of every run (`dataset`, `embeddings`, `epochs`, ...; None: not given).

        Raises:
            SpecError: a bad flag, a key given twice, or a `--set` of a row's own switch.
        """
        units = []
        for row in rows:
            units += [unit for unit in row.units() if unit not in units]
        entries = entries_from_flags(models=[u.model for u in units], seeds=seeds, settings=settings, **train)
        base = SweepSpec.create(entries, where="the command line")
        for key, values in base.settings.items():
            if len(values) > 1:
                raise SpecError(f"--set {key}: given {len(values)} times; a reproduction trains each row once per "
                                "seed: give each setting once (nli-zoo sweep trains grids)")
        for row in rows:
            for unit in row.units():
                clash = sorted(set(unit.overrides()) & {k.split(".")[0] for k in base.settings})
                if clash:
                    raise SpecError(f"--set {clash[0]}: row {row.id} is defined by {clash[0]}="
                                    f"{json.dumps(unit.overrides()[clash[0]])}; leave it out")
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(SweepSpec)}
        return cls(**fields, units=tuple(units))

    # The grid: one axis of units -----------------------------------------------------------------------
    def unit(self, name):
        for unit in self.units:
            if unit.name == name:
                return unit
        raise SpecError(f"no unit {name!r} in this reproduction")

    def axes(self):
        return [("unit", tuple(u.name for u in self.units)), ("seed", self.seeds)]

    def overrides(self, values):
        unit = self.unit(values["unit"]) if "unit" in values else None
        if unit is None:
            return super().overrides(values)
        return super().overrides({"model": unit.model, **unit.overrides()})

    def run_name(self, values, seed, trial_id=None):
        return f"{values['unit']}-seed={seed}"

    def train_options(self, values, seed, directory, trial_id=None):
        """`zoo.training.train`'s options of one run; `directory` is the sweep's (`DIR/sweeps/NAME`), the
        run goes to `DIR/runs` (shared by every sweep of the reproduction directory)."""
        unit = self.unit(values["unit"])
        options = dict(self.train, model=unit.model, seed=seed, overrides=self.overrides({"unit": unit.name}),
                       run_dir=os.path.join(runs_dir(directory), self.run_name(values, seed)))
        if self.verbose is not None:
            options["verbose"] = self.verbose
        return options

    def to_json(self):
        return dict(super().to_json(), units=[u.name for u in self.units])

    def sweep_name(self, paper_key):
        """The sweep directory's name: the paper and a digest of what it trains (the same for every process
        started with the same command)."""
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True, default=str).encode()).hexdigest()
        return f"{paper_key}-{digest[:10]}"

    # Ensembles ----------------------------------------------------------------------------------------
    def member_runs(self, row, directory, seed):
        """The run directories of an ensemble row's members for `seed` (`directory`: the reproduction's)."""
        return [os.path.join(directory, RUNS_DIR, f"{unit.name}-seed={seed}") for unit in row.units()]

    def ensemble_options(self, row, directory, seed):
        """`zoo.training.train`'s options combining an ensemble row's member runs of `seed` (no training)."""
        name = f"{row.model}-of-{'+'.join(u.name for u in row.units())}-seed={seed}"
        from zoo.registry import get_preset

        known = get_preset(row.model).names()
        options = dict(self.train, model=row.model, seed=seed, members=tuple(self.member_runs(row, directory, seed)),
                       overrides={key: value[0] for key, value in self.settings.items() if key in known},
                       run_dir=os.path.join(directory, RUNS_DIR, name))
        if self.verbose is not None:
            options["verbose"] = self.verbose
        return options

    def row_runs(self, row, directory):
        """`[(seed, run directory)]` of a row: its unit's runs, or its ensemble's."""
        if row.members:
            return [(seed, self.ensemble_options(row, directory, seed)["run_dir"]) for seed in self.seeds]
        unit = row.units()[0]
        return [(seed, os.path.join(directory, RUNS_DIR, f"{unit.name}-seed={seed}")) for seed in self.seeds]


def runs_dir(sweep_dir):
    """`DIR/runs` of a sweep directory `DIR/sweeps/NAME`."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.normpath(sweep_dir))), RUNS_DIR)


def check_directory(directory):
    """Refuses a `--dir` that holds something other than a reproduction.

    Raises:
        SpecError: naming what is in the way.
    """
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise SpecError(f"--dir {directory} is a file: choose a directory")
    if os.path.isdir(directory):
        other = sorted(set(os.listdir(directory)) - ENTRIES)
        if other:
            raise SpecError(f"--dir {directory} holds {other[0]!r}, so it is not a reproduction directory (runs/, "
                            "sweeps/, reports/): choose another --dir")


def check_runs(spec, sweep_dir):
    """Refuses to train into run directories that hold runs of other settings (another `--set` into the same
    `--dir`): each would fail, and the sweep stop after three. More `--epochs` is not another setting (the
    runs train further).

    Raises:
        SpecError: naming the first such run and what differs.
    """
    from zoo.runs import layout
    from zoo.runs.record import load_record
    from zoo.training.config import RunConfig

    for values in spec.points():
        options = spec.train_options(values, values["seed"], sweep_dir)
        if not os.path.exists(os.path.join(options["run_dir"], layout.CONFIG_FILE)):
            continue
        differences = layout.config_differences(load_record(options["run_dir"]).identity(),
                                                RunConfig.create(**options).identity())
        if differences:
            raise SpecError(f"{options['run_dir']} holds a run with other settings ({'; '.join(differences)}): "
                            "reproduce these settings into another --dir")


def check_sources(spec):
    """Refuses data and word vectors that name nothing, before anything trains (a run would fail on them).

    Raises:
        SpecError: naming the flag.
    """
    from zoo.data.corpora import NAMED_SOURCES
    from zoo.data.embeddings import VECTOR_NAMES

    dataset, data_dir, vectors = (spec.train.get(k) for k in ("dataset", "data_dir", "embeddings"))
    if dataset is not None and dataset not in NAMED_SOURCES and not os.path.exists(dataset):
        raise SpecError(f"--dataset {dataset}: not a corpus name ({', '.join(NAMED_SOURCES)}) nor a path; a corpus "
                        "on disk goes to --data-dir")
    if data_dir is not None and not os.path.exists(data_dir):
        raise SpecError(f"--data-dir {data_dir}: no such file or directory")
    if vectors is not None and vectors not in VECTOR_NAMES + ("none",) and not os.path.exists(vectors):
        raise SpecError(f"--embeddings {vectors}: not a name ({', '.join(VECTOR_NAMES)}, none) nor a vector file")


def select_rows(paper, wanted=None):
    """The runnable rows asked for (every runnable row by default).

    Raises:
        PaperError: an unknown row, a row that cannot run (with its reason), or nothing to run.
    """
    rows = paper.select(wanted)
    if wanted:
        for row in rows:
            if not row.runnable:
                raise PaperError(f"--rows {row.id}: {paper.key}'s row {row.name!r} cannot run here: {row.not_runnable}")
    rows = [row for row in rows if row.runnable]
    if not rows:
        raise PaperError(f"{paper.key}: no runnable row selected")
    return rows


def departures(paper, row, spec):
    """How a row's runs depart from the paper's conditions: `[(what, ours, the paper's)]`, empty when they
    train on the paper's data with the paper's vectors and the preset's settings (before the test set's
    size is known: `zoo.reproduction.report` adds it).
    """
    from zoo.registry import get_preset

    found = []
    train = spec.train
    source = train.get("data_dir") or train.get("dataset") or "snli"
    if not train.get("data_dir") and source != paper.data["dataset"]:
        found.append(("data", source, paper.data["dataset"]))
    for cap in ("max_train_examples", "max_eval_examples"):
        if train.get(cap) is not None:
            found.append((f"--{cap.replace('_', '-')}", str(train[cap]), "all"))
    models = [unit.model for unit in row.units()]
    presets = [get_preset(model) for model in models]
    wanted = presets[0].data.embeddings
    vectors = train.get("embeddings") or wanted
    if vectors != wanted:
        shown = vectors + (f" ({train.get('embedding_dim') or EMBEDDING_DIM}-d, random)" if vectors == "none" else "")
        found.append(("word vectors", shown, wanted))
    changed = {key: value[0] for key, value in spec.settings.items()}
    changed.update({key: train[key] for key in ("epochs", "batch_size") if train.get(key) is not None})
    for key, value in changed.items():
        name, _, entry = key.partition(".")
        for preset in presets:
            original = preset.value(name) if name in preset.names() else None
            if entry and isinstance(original, dict):
                original = original.get(entry)
            if original != value:
                found.append((key, json.dumps(value), json.dumps(original)))
                break
    return found
