"""Figures of record as data: one JSON-lines file per benchmark and machine,
`results/<benchmark>/<machine id>.jsonl`, one line per run, appended by the benchmark's `--record` and
never edited by hand (a new CPU adds a file; a rerun adds a line; the tables show each file's last line).

A line (`make_record`):

```json
{"benchmark": "serving", "date": "2026-11-28", "command": "python scripts/benchmark_serving.py ...",
 "versions": {"python": "3.12.3", "tensorflow": "2.21.0", "keras": "3.12.0", "torch": "2.13.0"},
 "machine": {"id": "amd-epyc-25-17", "model_name": "AMD EPYC", "vendor": "AuthenticAMD", "family": "25",
             "model": "17", "flags": ["avx2", ...], "l2_per_core_kib": 512, "cores": 2,
             "peak_gflops": {"1": 109.0, "2": 208.0}},
 "figures": {"saved_model/1/p50_ms": {"median": 6.75, "min": 6.28, "max": 7.4, "rounds": 3}, ...},
 "source": "measured"}
```

Each figure keeps its spread: the median, the least and the greatest of its rounds, and how many rounds
(a figure copied from a page that gave only a range has no median: `null`). `read_records` checks every
line and names the file and line of one that is not a record.
"""

import datetime
import json
import math
import os
import shlex
import statistics
import sys

from zoo.errors import UserError
from zoo.fileio import atomic_write
from zoo.measurements.machine import machine_id, software

RESULTS = "results"
MACHINE_FIELDS = ("model_name", "vendor", "family", "model", "stepping", "flags", "l2_per_core_kib", "cores", "gpu",
                  "hypervisor")
REQUIRED = ("benchmark", "machine", "figures")
SPREAD = ("median", "min", "max", "rounds")


class RecordError(UserError):
    """A record file that does not hold records: one line naming the file, the line and what is wrong."""


def figure(values):
    """A figure's spread over its rounds: `{"median", "min", "max", "rounds"}` (None for no values)."""
    values = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "rounds": len(values)}


def machine_facts(info):
    """What a record keeps of `zoo.measurements.machine.describe`'s description: the CPU, its id and its GEMM
    peak at each thread count measured."""
    facts = {key: info["cpu"].get(key) for key in MACHINE_FIELDS if key in info["cpu"]}
    return {"id": info.get("id") or machine_id(info["cpu"]), **facts,
            "peak_gflops": dict(info.get("peak_gflops") or {})}


def command_line(argv=None):
    """The command that ran, as a user would type it again (`python scripts/x.py ...`)."""
    argv = sys.argv if argv is None else argv
    script = os.path.relpath(argv[0]) if argv and os.path.exists(argv[0]) else (argv[0] if argv else "")
    return "python " + shlex.join([script] + list(argv[1:]))


def make_record(benchmark, figures, info, command=None, packages=("tensorflow", "keras"), extra_versions=None,
                source="measured", date=None, notes=None):
    """One run's record.

    Args:
        benchmark: the benchmark's name (its folder under `results/`).
        figures: `{name: values of its rounds, or a spread already made by figure()}`; empty ones are left out.
        info: the machine's description (`machine.describe`).
        command: the command line (default: this process's).
        packages: the packages whose versions the figures depend on (installed ones are named).
        extra_versions: versions from elsewhere (the PyTorch reference's environment: `{"torch": "2.13.0"}`).
        source: "measured", or where a copied figure comes from.
        date: the day (default: today, UTC).
        notes: a short free text (a setting the command line does not show).
    """
    spreads = {}
    for name, values in figures.items():
        spread = values if isinstance(values, dict) else figure(values if isinstance(values, (list, tuple))
                                                               else [values])
        if spread:
            spreads[name] = spread
    record = {"benchmark": benchmark,
              "date": date or datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "command": command or command_line(), "versions": {**software(packages), **(extra_versions or {})},
              "machine": machine_facts(info), "figures": spreads, "source": source}
    if notes:
        record["notes"] = notes
    return record


def record_path(results_dir, benchmark, machine):
    return os.path.join(results_dir, benchmark, f"{machine}.jsonl")


def append_record(record, results_dir=RESULTS):
    """Adds `record` as the last line of its file (`results/<benchmark>/<machine id>.jsonl`), the file
    rewritten whole and atomically; returns the file's path."""
    check_record(record, "the record")
    path = record_path(results_dir, record["benchmark"], record["machine"]["id"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
        if old and not old.endswith("\n"):
            old += "\n"
    with atomic_write(path, "w", encoding="utf-8") as f:
        f.write(old + json.dumps(record, sort_keys=True) + "\n")
    return path


def check_record(record, where):
    """Raises `RecordError` (naming `where`) unless `record` has a record's fields and figures."""
    if not isinstance(record, dict):
        raise RecordError(f"{where}: not a JSON object")
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise RecordError(f"{where}: no {', '.join(missing)}")
    if not isinstance(record["machine"], dict) or not record["machine"].get("id"):
        raise RecordError(f"{where}: machine has no id")
    if not isinstance(record["figures"], dict):
        raise RecordError(f"{where}: figures is not an object")
    for name, spread in record["figures"].items():
        if not isinstance(spread, dict) or set(spread) != set(SPREAD):
            raise RecordError(f"{where}: figure {name!r} is not {{median, min, max, rounds}}")
        for key in SPREAD:
            if spread[key] is not None and not isinstance(spread[key], (int, float)):
                raise RecordError(f"{where}: figure {name!r}: {key} is not a number")


def read_records(path):
    """The records of one file, in order; a line that is not a record raises `RecordError` naming the file and
    the line."""
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise RecordError(f"{path}, line {number}: not JSON ({error.msg})") from None
            check_record(record, f"{path}, line {number}")
            records.append(record)
    return records


def load_results(results_dir=RESULTS):
    """`{benchmark: {machine id: [records, oldest first]}}` of every record file under `results_dir`."""
    out = {}
    if not os.path.isdir(results_dir):
        return out
    for benchmark in sorted(os.listdir(results_dir)):
        folder = os.path.join(results_dir, benchmark)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".jsonl"):
                out.setdefault(benchmark, {})[name[:-len(".jsonl")]] = read_records(os.path.join(folder, name))
    return out


def value(record, name, key="median"):
    """A figure of a record (its median, or `key`), None when the record has no such figure."""
    spread = record["figures"].get(name)
    return None if spread is None else spread.get(key)
