"""The few-rows loop this machine runs: the tuning record `nli-zoo tune` writes, and the choice read from it.

At one pair under TensorFlow on a CPU the bi-LSTMs run `zoo.layers.tensorflow_lstm`'s few-rows loop in one of
two designs (`zoo.layers.loop_choice.DESIGNS`: "steps" reads only U per step, "kernel" is TensorFlow's
`BlockLSTMV2` reading [W; U]), and batches of up to `KERNEL_ROWS` rows take it. Which is faster depends on
the CPU's caches, so the machine decides, measured, as `torch.backends.cudnn.benchmark` or FFTW's wisdom do:
`nli-zoo tune` (`zoo.export.loop_timing`) times the candidates once and writes this machine's record,
`CACHE/tuning/<machine id>.json` (the zoo's cache root: `$NLI_ZOO_CACHE`, else `$XDG_CACHE_HOME/nli-zoo`, else
`~/.cache/nli-zoo`; the id is `zoo.fileio.cpu.machine_id`'s, so a record measured on another kind of CPU is
never this machine's).

- `loop_for(requested)`: `"auto"` (default) the tuned choice of this machine, else the safe default
  ("steps", `KERNEL_ROWS` 2); `"steps"` / `"kernel"` that design, as requested. A `LoopChoice` says where it
  came from (`source`: tuned / default / requested; the machine and date it was measured on).
- `export_saved_model` traces the serving graph under it and records it in `assets.extra/zoo.json`
  (`"loop"`); `zoo.predictors.open_predictor` applies it to a run's Keras model before its first trace (the
  demo and `predict`); an export's own graph keeps the choice it was traced with.
- A record that cannot be read, or is not one `nli-zoo tune` writes, is a `TuningFileError`: one line naming
  the file and saying to rerun `nli-zoo tune` (or delete it).
"""

import dataclasses
import logging
import os

from zoo import fileio
from zoo.data.vectors.download import resolve_cache_dir
from zoo.errors import UserError
from zoo.fileio.cpu import cpu, machine_id
from zoo.layers.loop_choice import DEFAULT_DESIGN, DEFAULT_DESIGN_REQUEST, DESIGN_REQUESTS, DESIGNS, KERNEL_ROWS

logger = logging.getLogger(__name__)

TUNING_SUBDIR = "tuning"
RECORD_FORMAT = 1
SOURCES = ("tuned", "default", "requested")
REMEDY = "rerun `nli-zoo tune` on this machine (or delete the file: the loop is then the default, steps)"


class TuningFileError(UserError, ValueError):
    """A tuning record that cannot be read or is malformed (one line naming the file and the remedy)."""


@dataclasses.dataclass(frozen=True)
class LoopChoice:
    """The few-rows loop a bi-LSTM traced on this machine runs, and where that choice came from.

    Attributes:
        design: `"steps"` or `"kernel"` (`zoo.layers.loop_choice.DESIGNS`).
        kernel_rows: the largest batch in rows that runs the few-rows loop (one pair is 2 rows).
        source: `"tuned"` (this machine's record), `"default"` (no record) or `"requested"` (`--loop`).
        machine: the machine id the choice was measured on (tuned only).
        date: when it was measured (tuned only, ISO 8601).
    """

    design: str = DEFAULT_DESIGN
    kernel_rows: int = KERNEL_ROWS
    source: str = "default"
    machine: str = None
    date: str = None

    def describe(self):
        """`steps, kernel rows 2 (tuned on amd-epyc-25-1 2025-01-31T10:00:00)`, `... (default)`."""
        where = f"tuned on {self.machine} {self.date}" if self.source == "tuned" else self.source
        return f"{self.design}, kernel rows {self.kernel_rows} ({where})"

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data):
        """The `"loop"` entry of an export's metadata; None where the export predates it (or it is not one)."""
        if not isinstance(data, dict) or data.get("design") not in DESIGNS:
            return None
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def tuning_folder(cache_dir=None):
    """`CACHE/tuning` (`zoo.data.vectors.resolve_cache_dir`: `cache_dir`, else `$NLI_ZOO_CACHE`, else
    `$XDG_CACHE_HOME/nli-zoo`, else `~/.cache/nli-zoo`)."""
    return os.path.join(resolve_cache_dir(cache_dir), TUNING_SUBDIR)


def this_machine():
    """This machine's id (`zoo.fileio.cpu.machine_id`)."""
    return machine_id(cpu())


def record_path(machine=None, cache_dir=None):
    """The tuning record of `machine` (default: this machine): `CACHE/tuning/<machine id>.json`."""
    return os.path.join(tuning_folder(cache_dir), f"{machine or this_machine()}.json")


def _malformed(path, why):
    return TuningFileError(f"{path}: {why}: {REMEDY}")


def check_record(record, path, machine):
    """`record` when it is a tuning record of `machine` as `nli-zoo tune` writes it, else a TuningFileError."""
    if not isinstance(record, dict):
        raise _malformed(path, "not a tuning record")
    if record.get("format") != RECORD_FORMAT:
        raise _malformed(path, f"a tuning record of format {record.get('format')!r}, not {RECORD_FORMAT}")
    measured_on = (record.get("machine") or {}).get("id") if isinstance(record.get("machine"), dict) else None
    if measured_on != machine:
        raise _malformed(path, f"measured on {measured_on!r}, not on this machine ({machine})")
    choice = record.get("choice")
    if not isinstance(choice, dict) or choice.get("design") not in DESIGNS:
        raise _malformed(path, f"its choice's design is not one of {', '.join(DESIGNS)}")
    rows = choice.get("kernel_rows")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise _malformed(path, f"its choice's kernel_rows is not a positive whole number: {rows!r}")
    if not isinstance(record.get("date"), str):
        raise _malformed(path, "it has no date")
    return record


def read_record(machine=None, cache_dir=None):
    """This machine's tuning record (a dict as `tune_record` made it), or None where it has none.

    Raises:
        TuningFileError: the file cannot be read or is not a tuning record of this machine (one line).
    """
    machine = machine or this_machine()
    path = record_path(machine, cache_dir)
    try:
        record = fileio.read_json(path, remedy=REMEDY)
    except fileio.CorruptFileError as error:
        raise TuningFileError(str(error)) from None
    except OSError as error:  # a folder in its place, no permission
        raise TuningFileError(f"{path}: cannot be read ({error.strerror or error}): {REMEDY}") from None
    return None if record is None else check_record(record, path, machine)


def tuned_loop(cache_dir=None):
    """This machine's tuned `LoopChoice`, else the safe default ("steps", `KERNEL_ROWS`, source "default").

    Raises:
        TuningFileError: this machine's record cannot be read or is malformed.
    """
    record = read_record(cache_dir=cache_dir)
    if record is None:
        return LoopChoice()
    return LoopChoice(record["choice"]["design"], record["choice"]["kernel_rows"], "tuned", record["machine"]["id"],
                      record["date"])


def check_loop_request(requested):
    """`requested` when it is one of `DESIGN_REQUESTS`, else a ValueError naming `--loop` and the choices."""
    if requested not in DESIGN_REQUESTS:
        raise ValueError(f"--loop must be one of {', '.join(DESIGN_REQUESTS)}, got {requested!r}")
    return requested


def loop_for(requested=DEFAULT_DESIGN_REQUEST, cache_dir=None):
    """The `LoopChoice` of `requested`: `"auto"`, this machine's tuned choice (else the default); a design, that
    design as requested (with the default `KERNEL_ROWS`); a `LoopChoice` as it is."""
    if isinstance(requested, LoopChoice):
        return requested
    if check_loop_request(requested) == "auto":
        return tuned_loop(cache_dir)
    return LoopChoice(requested, KERNEL_ROWS, "requested")


def apply_loop(requested=DEFAULT_DESIGN_REQUEST, cache_dir=None):
    """Sets the few-rows loop of `requested` (`loop_for`) for every bi-LSTM this process traces from now on
    (`zoo.layers.recurrent.set_few_rows_loop`; what is traced already keeps its loop). Returns the choice."""
    from zoo.layers.recurrent import set_few_rows_loop  # Keras: imported when a model is about to run

    choice = loop_for(requested, cache_dir)
    set_few_rows_loop(choice.design, choice.kernel_rows)
    logger.debug(f"few-rows loop: {choice.describe()}")
    return choice


def write_record(record, cache_dir=None):
    """Writes a tuning record (`zoo.export.loop_timing.tune_record`) as this machine's, atomically; returns the path."""
    path = record_path(record["machine"]["id"], cache_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fileio.write_json(path, record)
    return path
