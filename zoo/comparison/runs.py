"""The finished runs a comparison reads (`config.json`, `results.json`, the diagnostics report), found from
run directories, folders holding runs (a sweep) or glob patterns, and grouped by everything but the seed.
"""

import dataclasses
import glob
import json
import os

import numpy as np

from zoo.diagnostics.report import JSON_FILE as DIAGNOSTICS_FILE
from zoo.errors import UserError
from zoo.runs import layout
from zoo.runs.manifest import check_run
from zoo.runs.record import CONFIG_FILE, RunRecord, load_record
from zoo.runs.results import RESULTS_FILE, RunResults, read_results

EVALUATIONS_DIR = "evaluations"  # RUN/evaluations: evaluate.py's reports, the diagnostics report among them
# What makes two runs the same experiment but for the seed: config.json's identity entries, less the seed.
GROUP_KEYS = tuple(key for key in layout.IDENTITY_KEYS if key != "seed") + ("embedding_dim", "init_from")


@dataclasses.dataclass
class ComparedRun:
    """A finished run as a comparison reads it: its typed record (`zoo.runs.record.RunRecord`), its results
    and its diagnostics report."""

    run_dir: str
    record: RunRecord
    results: RunResults
    diagnostics: dict = None

    @property
    def model(self):
        return self.record.model

    @property
    def seed(self):
        return self.record.seed

    def _identity(self):
        """The record's identity entries but the seed, with the two that group runs besides them."""
        written = self.record.to_json()
        return {key: written.get(key) for key in GROUP_KEYS}

    @property
    def test(self):
        return self.results.test

    def group_key(self):
        """The run's settings but its seed, as comparable text."""
        return json.dumps(self._identity(), sort_keys=True, default=str)

    def correct(self):
        """Per test item, whether the run labelled it right (None when results.json has no per-item
        predictions: runs scored before they were kept)."""
        test = self.test
        if "predictions" not in test or "gold" not in test or len(test["predictions"]) != len(test["gold"]):
            return None
        return np.frombuffer(test["predictions"].encode(), "uint8") == np.frombuffer(test["gold"].encode(), "uint8")

    def settings(self):
        """The run's settings but its seed, flat: `{"model", "preset.model.hidden_size", "data.source", ...}`."""
        flat = {}
        for key, value in self._identity().items():
            _flatten(key, value, flat)
        return flat


def _flatten(prefix, value, flat):
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, flat)
    else:
        flat[prefix] = value


def find_runs(arguments):
    """The finished runs that `arguments` name: run directories, folders holding runs (searched below,
    e.g. a sweep), or glob patterns of either.

    Returns:
        `(runs, skipped)`: `ComparedRun`s in path order, and `[(run_dir, why)]` for runs that cannot be compared
        (unfinished: no results.json).

    Raises:
        UserError: a pattern matching nothing, a path that does not exist or holds no run, a damaged file.
        zoo.fileio.CorruptFileError: a run's config.json or results.json damaged, or not the one its manifest
            records (`zoo.fileio.ManifestError`), one line naming it.
    """
    paths = []
    for argument in arguments:
        if glob.has_magic(argument):
            matched = sorted(glob.glob(argument))
            if not matched:
                raise UserError(f"{argument}: no file or directory matches")
            paths += matched
        elif not os.path.exists(argument):
            raise UserError(f"{argument}: no such run directory")
        else:
            paths.append(argument)
    run_dirs = []
    for path in paths:
        found = list(_run_dirs(path))
        if not found and not glob.has_magic(path):
            raise UserError(f"{path}: not a run directory and holds none (no {layout.CONFIG_FILE} in it or below)")
        run_dirs += [d for d in found if d not in run_dirs]
    if not run_dirs:
        raise UserError(f"{' '.join(arguments)}: no run directories")
    runs, skipped = [], []
    for run_dir in run_dirs:
        record = load_record(run_dir)
        results = read_results(run_dir)
        if results is None:
            skipped.append((run_dir, f"unfinished (no {layout.RESULTS_FILE})"))
            continue
        # the files compared, as the run wrote them (ManifestError: one line naming the file and the remedy)
        check_run(run_dir, [CONFIG_FILE, RESULTS_FILE], expected=record.manifest, holder=lambda: layout.holder(run_dir))
        diagnostics = layout.read_json(os.path.join(run_dir, EVALUATIONS_DIR, DIAGNOSTICS_FILE))
        runs.append(ComparedRun(run_dir, record, results, diagnostics))
    return runs, skipped


def _run_dirs(path):
    """The run directories at or below `path` (a run's own subfolders are not searched)."""
    if not os.path.isdir(path):
        return
    if os.path.exists(os.path.join(path, layout.CONFIG_FILE)):
        yield os.path.normpath(path)
        return
    for name in sorted(os.listdir(path)):
        yield from _run_dirs(os.path.join(path, name))


def group_runs(runs):
    """Runs grouped by everything but the seed, each group named by its model and the settings on which the
    groups differ (`bowman_lstm hidden_size=16`).

    Returns:
        `[(label, [ComparedRun, ...] sorted by seed)]`, sorted by label.

    Raises:
        UserError: two runs of one group scored on different test items.
    """
    groups = {}
    for run in runs:
        groups.setdefault(run.group_key(), []).append(run)
    flats = {key: members[0].settings() for key, members in groups.items()}

    def varying(flat_list, keep):
        names = set().union(*(flat.keys() for flat in flat_list))
        return sorted(name for name in names if keep(name) and len(
            {json.dumps(f.get(name), sort_keys=True, default=str) for f in flat_list}) > 1)

    # data, vectors and the like wherever they differ; preset settings where they differ within one model
    shared = varying(list(flats.values()), lambda name: name != "model" and not name.startswith("preset."))
    labelled = []
    for key, members in groups.items():
        flat = flats[key]
        same_model = [f for f in flats.values() if f.get("model") == flat.get("model")]
        names = shared + varying(same_model, lambda name: name.startswith("preset."))
        parts = [str(flat.get("model"))] + [f"{_short(name)}={_value(flat.get(name))}" for name in names]
        members = sorted(members, key=lambda r: (r.seed is None, r.seed, r.run_dir))
        digests = {r.test.get("items") for r in members if r.test.get("items")}
        if len(digests) > 1:
            raise UserError(f"{members[0].run_dir} and {members[-1].run_dir} have the same settings but were scored "
                            "on different test items: compare them as separate runs")
        labelled.append((" ".join(parts), members))
    labelled.sort(key=lambda entry: entry[0])
    seen = {}
    for index, (label, members) in enumerate(labelled):  # settings this module does not show apart
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labelled[index] = (f"{label} #{seen[label]}", members)
    return labelled


def _short(name):
    """`preset.model.hidden_size` -> `hidden_size`; other settings keep their path (`data.source`)."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "preset" and len(parts) > 2 else name


def _value(value):
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
