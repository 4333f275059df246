"""A reproduction from start to report: the rows' units trained as one sweep (`zoo.comparison.tuner.run_sweep`:
resumable, shared by KerasTuner's distributed workers), an ensemble row's member runs combined per seed
(`nli-zoo train --model him --members`: evaluated, not trained), then the report written.

```python
from zoo.reproduction.plan import ReproductionSpec, select_rows
from zoo.reproduction.reproduce import reproduce
from zoo.reproduction.tables import load_paper

paper = load_paper("rocktaschel2016")
rows = select_rows(paper, ["attention", "wbw"])
spec = ReproductionSpec.of(rows, seeds="2", settings=["hidden_size=16"], dataset="snli_sample",
                           embeddings="glove-6b-50d", epochs=2)
result = reproduce(paper, rows, spec, "repro")   # a `zoo.reproduction.records.ReproductionResult`
result.report.claims[0].verdict                   # "held", "not held" or "not resolved"
```
"""

import dataclasses
import logging
import os

import keras

from zoo.comparison import statistics
from zoo.comparison.tuner import SweepStopped, run_sweep
from zoo.errors import ConfigError, TrainError, TrainInterrupted
from zoo.reproduction import report as reporting
from zoo.reproduction.plan import REPORTS_DIR, SWEEPS_DIR, check_directory, check_runs
from zoo.reproduction.records import ReproductionResult
from zoo.training import train as train_run

logger = logging.getLogger(__name__)


def reproduce(paper, rows, spec, directory, train=train_run, resamples=statistics.RESAMPLES, seed=0, out=None,
              tensorboard=True):
    """Runs (or resumes, or joins as a worker) a reproduction and writes its report.

    Args:
        paper: the `Paper`; rows: the runnable rows to train; spec: their `ReproductionSpec`.
        directory: the reproduction directory (`DIR/runs`, `DIR/sweeps`, `DIR/reports`).
        train: the training function (`zoo.training.train`).
        resamples, seed: of the bootstrap. out: the report's folder (default `DIR/reports/PAPER`).
        tensorboard: also write the report as TensorBoard summaries.

    Returns:
        the `ReproductionResult`: this process's role, the trials and the sweep's folder, and, except on a
        worker (the chief, or the process alone, writes the report), the `report` and its files' `paths`.

    Raises:
        SpecError, UserError: a bad selection or directory; SweepStopped: a run's user error or an
        interruption.
    """
    check_directory(directory)
    sweep_dir = os.path.join(directory, SWEEPS_DIR, spec.sweep_name(paper.key))
    spec.check(sweep_dir)  # every run's settings, as nli-zoo train checks them
    check_runs(spec, sweep_dir)
    logger.info(f"{paper.key}: rows {', '.join(r.id for r in rows)}; {len(spec.units)} unit(s) x "
                f"{len(spec.seeds)} seed(s); the sweep: {sweep_dir}")
    summary = run_sweep(spec, sweep_dir, train=train)
    result = ReproductionResult(role=summary.role, trials=summary.trials, sweep_dir=sweep_dir)
    if result.role == "worker":
        return result
    failures = {os.path.normpath(run): trial.error or trial.status.lower()
                for trial in summary.trials if not trial.completed for run in trial.runs}
    for row in rows:
        if row.members:
            combine(spec, row, directory, train, failures)
    report = reporting.build(paper, spec, directory, rows, failures=failures, resamples=resamples, seed=seed)
    paths = reporting.write(report, out or os.path.join(directory, REPORTS_DIR, paper.key), tensorboard=tensorboard)
    return dataclasses.replace(result, report=report, paths=paths)


def combine(spec, row, directory, train, failures):
    """Combines an ensemble row's member runs of every seed whose members finished (once: a finished
    combination is kept; one a kill interrupted is made again)."""
    for seed in spec.seeds:
        options = spec.ensemble_options(row, directory, seed)
        members = spec.member_runs(row, directory, seed)
        missing = [m for m in members if not os.path.exists(os.path.join(m, "results.json"))]
        if missing:
            failures[os.path.normpath(options["run_dir"])] = f"member {missing[0]} did not finish"
            continue
        if os.path.exists(os.path.join(options["run_dir"], "results.json")):
            continue
        options["overwrite"] = os.path.exists(options["run_dir"])  # a combination a kill interrupted
        logger.info(f"row {row.id}, seed {seed}: combining {' and '.join(members)}")
        try:
            train(**options)
        except ConfigError as error:
            raise SweepStopped(f"{options['run_dir']}: {error}") from None
        except TrainInterrupted:
            raise SweepStopped("interrupted: rerun the same command to resume the reproduction", status=130) from None
        except TrainError as error:
            failures[os.path.normpath(options["run_dir"])] = str(error)
        finally:
            keras.backend.clear_session()


__all__ = ["combine", "reproduce"]
