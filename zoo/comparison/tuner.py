"""`run_sweep`: a sweep's trials, handed out by a KerasTuner oracle and trained by `zoo.training.train`.

The sweep directory holds:
```
SWEEP/
  sweep.json        # the specification (zoo.comparison.spec.SweepSpec): a rerun must match it
  tuner/            # KerasTuner's project: oracle.json, trial_N/trial.json, one file per tuner
  runs/NAME/        # one ordinary run directory per trained run (as `nli-zoo train` writes it)
```
KerasTuner does the bookkeeping: which trial runs next, which finished, which a killed process left
running (a rerun hands those out again first, and each resumes in its run directory from its last finished
epoch), and its distributed mode: with `KERASTUNER_TUNER_ID=chief`, `KERASTUNER_ORACLE_IP` and
`KERASTUNER_ORACLE_PORT` set, the process serves the oracle over gRPC; processes with another
`KERASTUNER_TUNER_ID` (and the same address) ask it for trials, so that no trial is run twice. A grid's
trials come from `GridOracle`; a search's from KerasTuner's `RandomSearchOracle` or
`BayesianOptimizationOracle` (the objective: the mean dev accuracy of the sample's seeds).
"""

import contextlib
import glob
import io
import json
import logging
import os
import statistics
import time

import keras
import keras_tuner
from keras_tuner.engine.base_tuner import BaseTuner
from keras_tuner.engine.trial import TrialStatus
from keras_tuner.errors import FailedTrialError, FatalError
from keras_tuner.oracles import BayesianOptimizationOracle, RandomSearchOracle

from zoo import fileio
from zoo.comparison.records import SweepSummary, Trial
from zoo.comparison.spec import SpecError
from zoo.errors import ConfigError, TrainError, TrainInterrupted, UserError
from zoo.training import train as train_run

logger = logging.getLogger(__name__)

SPEC_FILE = "sweep.json"
TUNER_DIR = "tuner"
TUNER_REMEDY = ("delete {tuner} and rerun the same command: the trials are handed out again in the same order, each "
                "run already trained is read back and a killed one resumes")
OBJECTIVE = keras_tuner.Objective("dev_accuracy", direction="max")
ORACLE_SEED = 1  # the random and Bayesian searches sample the same sequence on every machine
ENVIRONMENT = ("KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP", "KERASTUNER_ORACLE_PORT")
# The kill hooks of a sweep's own writes (`zoo.fileio.fault_point`), besides those of each trial's run
# (`zoo.runs.faults`): sweep.json, KerasTuner's oracle.json and a trial's trial.json (first occurrences).
FAULT_STEPS = ("sweep:spec", "sweep:oracle", "sweep:trial")



class SweepStopped(FatalError):
    """The sweep stopped before its end: a user error (status 2) or an interruption (status 130); the
    message says what to do. KerasTuner lets a `FatalError` through instead of failing the trial."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


class _KeptState:
    """What a sweep's oracle adds to KerasTuner's: its files written atomically (`zoo.fileio`: a kill never
    leaves half a file), and a rerun trying again the trials that failed (after their cause was fixed).

    Through KerasTuner's public `Oracle` API (`save`, `get_state`, `set_state`, `trials`), but for one method:
    KerasTuner writes each `trial_N/trial.json` from `Oracle._save_trial` and has no public hook for it, so
    that one is overridden (as in keras-tuner 1.4.8, the version requirements.txt pins).

    Args:
        state_file: where the oracle's state goes (`SWEEP/tuner/oracle.json`, where KerasTuner reloads it).
    """

    def __init__(self, *args, state_file, **kwargs):
        super().__init__(*args, **kwargs)
        self.state_file = state_file

    def save(self):
        fileio.write_json(self.state_file, self.get_state())
        fileio.fault_point("sweep:oracle")

    def _save_trial(self, trial):  # no public hook: see the class docstring
        folder = os.path.join(os.path.dirname(self.state_file), f"trial_{trial.trial_id}")
        os.makedirs(folder, exist_ok=True)
        fileio.write_json(os.path.join(folder, "trial.json"), trial.get_state())
        fileio.fault_point("sweep:trial")

    def set_state(self, state):
        """KerasTuner's state, with the trials that failed queued to run again (a rerun after a fix), and so
        is a trial whose `trial.json` says it runs but that the state does not list as ongoing: a process
        killed between the two writes of a new trial (`sweep:trial`) left it so, and no tuner would take it up."""
        state = dict(state, retry_queue=list(state["retry_queue"]), run_times=dict(state["run_times"]),
                     end_order=list(state["end_order"]))
        ongoing = set(state["ongoing_trials"].values())
        for trial_id, trial in sorted(self.trials.items()):
            orphaned = trial.status == TrialStatus.RUNNING and trial_id not in ongoing
            if (trial.status == TrialStatus.FAILED or orphaned) and trial_id not in state["retry_queue"]:
                state["retry_queue"].append(trial_id)
                state["run_times"][trial_id] = 0
                if trial_id in state["end_order"]:
                    state["end_order"].remove(trial_id)
        super().set_state(state)


class GridOracle(_KeptState, keras_tuner.Oracle):
    """Hands out each point of a grid once, in order (KerasTuner's `GridSearchOracle` keeps its order in
    memory only, so a rerun would not know which points remain).

    Args:
        points: the grid's points as hyperparameter values, `[{name: value}]`.
        hyperparameters: the `keras_tuner.HyperParameters` with a `Choice` per axis.
    """

    def __init__(self, points, hyperparameters, state_file):
        super().__init__(objective=OBJECTIVE, max_trials=len(points), hyperparameters=hyperparameters,
                         allow_new_entries=False, tune_new_entries=False, seed=ORACLE_SEED,
                         max_consecutive_failed_trials=3, state_file=state_file)
        self.points = points

    def populate_space(self, trial_id):
        handed_out = [trial.hyperparameters.values for trial in self.trials.values()]
        for values in self.points:
            if values not in handed_out:
                return {"status": TrialStatus.RUNNING, "values": dict(values)}
        return {"status": TrialStatus.STOPPED, "values": None}


class RandomOracle(_KeptState, RandomSearchOracle):
    """KerasTuner's random search, its state kept as `_KeptState` says."""


class BayesianOracle(_KeptState, BayesianOptimizationOracle):
    """KerasTuner's Bayesian optimization (a Gaussian process), its state kept as `_KeptState` says."""


class Codec:
    """A sweep's values as KerasTuner hyperparameters take them (bool, int, float or str of one type per
    name): values of mixed or other types travel as their JSON text."""

    def __init__(self):
        self.decoders = {}

    def encode(self, name, values):
        kinds = {type(v) for v in values}
        if len(kinds) == 1 and kinds <= {bool, int, float, str}:
            return list(values)
        encoded = [json.dumps(v, sort_keys=True) for v in values]
        self.decoders[name] = dict(zip(encoded, values))
        return encoded

    def decode(self, values):
        return {name: self.decoders[name][v] if name in self.decoders else v for name, v in values.items()}

    def encode_values(self, values):
        """One point's values, each as `encode` gave it."""
        return {name: json.dumps(v, sort_keys=True) if name in self.decoders else v for name, v in values.items()}


def make_oracle(spec, state_file):
    """The oracle of a sweep (its state kept in `state_file`) and the codec of its hyperparameter values."""
    codec, hp = Codec(), keras_tuner.HyperParameters()
    if spec.search == "grid":
        for name, values in spec.axes():
            hp.Choice(name, codec.encode(name, values), ordered=False)
        return GridOracle([codec.encode_values(point) for point in spec.points()], hp, state_file), codec
    if len(spec.models) > 1:
        hp.Choice("model", list(spec.models), ordered=False)
    else:
        hp.Fixed("model", spec.models[0])
    for name, space in spec.tune.items():
        if "values" in space:
            hp.Choice(name, codec.encode(name, space["values"]), ordered=False)
        elif isinstance(space["min"], int) and isinstance(space["max"], int):
            hp.Int(name, space["min"], space["max"], sampling="log" if space["log"] else "linear")
        else:
            hp.Float(name, float(space["min"]), float(space["max"]), sampling="log" if space["log"] else "linear")
    kind = RandomOracle if spec.search == "random" else BayesianOracle
    oracle = kind(objective=OBJECTIVE, max_trials=spec.max_trials, seed=ORACLE_SEED, hyperparameters=hp,
                  allow_new_entries=False, tune_new_entries=False, max_consecutive_failed_trials=3,
                  state_file=state_file)
    return oracle, codec


class SweepTuner(BaseTuner):
    """KerasTuner's tuner whose trial is one run (a grid point) or one run per seed (a search's sample),
    trained in this process by `train` (`zoo.training.train`, what `nli-zoo train` runs).

    Args:
        spec: the `SweepSpec`.
        directory: the sweep directory.
        train: the training function, `train(**options) -> TrainOutcome` (its `results` read).
    """

    def __init__(self, spec, directory, train=train_run):
        self.spec, self.sweep_dir, self.train = spec, directory, train
        self.done = []  # this process's trials (`Trial`s)
        self._started, self._metrics = {}, {}
        self.worker = role() == "worker"
        oracle, self.codec = make_oracle(spec, os.path.join(directory, TUNER_DIR, "oracle.json"))
        super().__init__(oracle, directory=directory, project_name=TUNER_DIR)

    def save(self):
        if not self.worker:  # a worker's oracle is the chief's, over gRPC
            self.oracle.save()
        fileio.write_json(os.path.join(self.project_dir, f"{self.tuner_id}.json"), self.get_state())

    def run_names(self, trial_id, values):
        """The run directories of a trial (`values` decoded)."""
        values = dict(values)
        seeds = [values.pop("seed")] if "seed" in values else list(self.spec.seeds)
        search_id = None if self.spec.search == "grid" else trial_id
        return [(seed, self.spec.train_options(values, seed, self.sweep_dir, search_id)) for seed in seeds]

    def run_trial(self, trial, *unused_args, **unused_kwargs):  # search()'s arguments (verbose) are not ours
        values = self.codec.decode(trial.hyperparameters.values)
        dev, test = [], []
        for seed, options in self.run_names(trial.trial_id, values):
            logger.info(f"trial {trial.trial_id}: {options['run_dir']}")
            try:
                result = self.train(**options)
            except ConfigError as error:
                raise SweepStopped(f"{options['run_dir']}: {error}") from None
            except TrainInterrupted:
                raise SweepStopped(f"interrupted: rerun the same command to resume the sweep (trial "
                                   f"{trial.trial_id} resumes after its last finished epoch)", status=130) from None
            except TrainError as error:  # data, vectors, a diverged loss: this trial fails, the sweep goes on
                raise FailedTrialError(f"{options['run_dir']}: {error}") from None
            finally:
                keras.backend.clear_session()  # the next run starts from a clean Keras state
            dev.append(result.results.dev_accuracy)
            test.append(result.results.test_accuracy)
        metrics = {"dev_accuracy": statistics.fmean(dev), "test_accuracy": statistics.fmean(test)}
        self._metrics[trial.trial_id] = metrics  # a worker's trial object does not get the oracle's copy
        return metrics

    def on_search_begin(self):
        self.save()  # a process killed during its first trial is reloaded on the rerun

    def on_trial_begin(self, trial):
        self._started[trial.trial_id] = time.time()
        shown = ", ".join(f"{k}={v}" for k, v in self.codec.decode(trial.hyperparameters.values).items())
        logger.info(f"trial {trial.trial_id} (of {self.oracle.max_trials}): {shown}")

    def on_trial_end(self, trial):
        super().on_trial_end(trial)
        seconds = time.time() - self._started.pop(trial.trial_id, time.time())
        values = self.codec.decode(trial.hyperparameters.values)
        runs = [o["run_dir"] for _, o in self.run_names(trial.trial_id, values)]
        if trial.status == TrialStatus.COMPLETED:
            metrics = self._metrics.pop(trial.trial_id)
            entry = Trial(trial.trial_id, trial.status, values, runs, seconds=seconds, **metrics)
            logger.info(f"trial {trial.trial_id} finished in {seconds:.0f} s: dev accuracy "
                        f"{entry.dev_accuracy:.4f}, test accuracy {entry.test_accuracy:.4f}")
        else:
            entry = Trial(trial.trial_id, trial.status, values, runs, seconds=seconds, error=last_line(trial.message))
            where = os.path.join(self.project_dir, f"trial_{trial.trial_id}", "trial.json")
            logger.warning(f"trial {trial.trial_id} failed: {entry.error} (the traceback: {where})")
        self.done.append(entry)

    def summary(self):
        """Every trial of the sweep (this process's only, on a worker), in trial order."""
        if self.worker:
            return sorted(self.done, key=lambda e: e.trial)
        entries = []
        for trial_id, trial in sorted(self.oracle.trials.items()):
            values = self.codec.decode(trial.hyperparameters.values)
            runs = [o["run_dir"] for _, o in self.run_names(trial_id, values)]
            if trial.status == TrialStatus.COMPLETED:
                entries.append(Trial(trial_id, trial.status, values, runs,
                                     **{name: trial.metrics.get_last_value(name)
                                        for name in ("dev_accuracy", "test_accuracy")}))
            else:
                entries.append(Trial(trial_id, trial.status, values, runs,
                                     error=last_line(trial.message) if trial.message else None))
        return entries


def last_line(message):
    lines = [line for line in str(message or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else "unknown error"


def role():
    """This process's part in KerasTuner's distributed mode: "alone", "chief" or "worker".

    Raises:
        UserError: `KERASTUNER_ORACLE_IP` set without the other two variables.
    """
    given = [name for name in ENVIRONMENT if os.environ.get(name)]
    if "KERASTUNER_ORACLE_IP" not in given:
        return "alone"
    missing = [name for name in ENVIRONMENT if name not in given]
    if missing:
        raise UserError(f"KERASTUNER_ORACLE_IP is set, but not {' and '.join(missing)}: a distributed sweep needs "
                        "all three (KERASTUNER_TUNER_ID=chief on the process serving the oracle)")
    return "chief" if "chief" in os.environ["KERASTUNER_TUNER_ID"] else "worker"


def claim(directory, spec):
    """Records the sweep in `SWEEP/sweep.json`, or checks that the one recorded is this one.

    Raises:
        SpecError: the directory holds another sweep.
        zoo.fileio.CorruptFileError: a damaged `sweep.json` (one line: delete it, the rerun writes it again).
    """
    path = os.path.join(directory, SPEC_FILE)
    wanted = json.loads(json.dumps(spec.to_json()))
    remedy = "delete it and rerun the same command: it is written again from the command (trials and runs are kept)"
    recorded = fileio.read_json(path, None, remedy=remedy)
    if recorded is not None and not isinstance(recorded, dict):
        raise fileio.CorruptFileError(f"{path}: not a sweep's specification: {remedy}", path)
    if recorded is None:
        if os.path.isdir(directory) and set(os.listdir(directory)) - {SPEC_FILE, TUNER_DIR, "runs", fileio.LOCK_NAME}:
            raise SpecError(f"{directory} exists and is not a sweep directory: choose another --dir")
        os.makedirs(directory, exist_ok=True)
        fileio.write_json(path, wanted)
        fileio.fault_point("sweep:spec")
        return
    differences = [f"{key}: {recorded.get(key)!r} there, {wanted.get(key)!r} here"
                   for key in wanted if recorded.get(key) != wanted.get(key)]
    if differences:
        raise SpecError(f"{directory} holds another sweep ({'; '.join(differences)}): rerun it with its own "
                        "settings to resume it, or choose another --dir")


def check_tuner_files(directory):
    """Reads every state file KerasTuner will reload (`tuner/oracle.json`, `tuner/TUNER_ID.json`,
    `tuner/trial_N/trial.json`) before it does, so that a damaged one is one line naming it and the remedy.

    Raises:
        zoo.fileio.CorruptFileError: the first damaged file.
    """
    tuner = os.path.join(directory, TUNER_DIR)
    remedy = TUNER_REMEDY.format(tuner=tuner)
    paths = sorted(glob.glob(os.path.join(tuner, "*.json")) + glob.glob(os.path.join(tuner, "trial_*", "trial.json")))
    for path in paths:
        if not isinstance(fileio.read_json(path, remedy=remedy), dict):
            raise fileio.CorruptFileError(f"{path}: not a KerasTuner state: {remedy}", path)


def sweep_lock(directory, part):
    """The lock of the one process running a sweep alone or as KerasTuner's chief (its workers join it: they
    take trials from the chief, each trial's run directory locked by its own run).

    Raises:
        SweepStopped: another process runs the sweep (one line naming it).
    """
    if part == "worker":
        return contextlib.nullcontext()
    lock = fileio.DirectoryLock(directory, what="sweep directory")
    try:
        return lock.acquire()
    except (fileio.LockedError, NotADirectoryError) as error:
        raise SweepStopped(f"{error}; to share a sweep between processes, start them as KerasTuner's chief and "
                           "workers (docs/comparisons.md)") from None


def run_sweep(spec, directory, train=train_run):
    """Runs (or resumes, or joins) the sweep `spec` in `directory`.

    Alone, this process runs every trial left. As KerasTuner's chief (`KERASTUNER_TUNER_ID=chief`) it serves
    the oracle until the workers have run every trial; as a worker it runs the trials the chief hands out.

    Args:
        spec: the `SweepSpec`.
        directory: the sweep directory (created; a rerun resumes it).
        train: the training function (`zoo.training.train`).

    Returns:
        the `zoo.comparison.records.SweepSummary`: this process's role and the sweep's `Trial`s.

    Raises:
        SpecError, UserError: a bad specification, or a directory that holds another sweep.
        SweepStopped: a run's user error, or an interruption.
    """
    part = role()
    spec.check(directory)
    with sweep_lock(directory, part):
        claim(directory, spec)
        check_tuner_files(directory)
        try:
            tuner = quietly(lambda: SweepTuner(spec, directory, train))
        except (KeyError, TypeError, ValueError, RuntimeError) as error:  # a state KerasTuner cannot reload
            if isinstance(error, UserError):
                raise
            tuner_dir = os.path.join(directory, TUNER_DIR)
            raise SweepStopped(f"{tuner_dir}: KerasTuner cannot reload the sweep's state ({type(error).__name__}: "
                               f"{last_line(str(error))[:200]}): {TUNER_REMEDY.format(tuner=tuner_dir)}") from None
        return search(tuner, part)


def quietly(build):
    """`build()`, with what KerasTuner prints meanwhile ("Reloading Tuner from ...", a `print` it has no switch
    for) said through this module's logger instead, so that `--quiet` drops it as it drops the zoo's notes."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            return build()
    finally:
        for line in printed.getvalue().splitlines():
            logger.info(line)


def search(tuner, part):
    """`run_sweep` once the sweep directory is held and its state read."""
    if part == "chief":
        logger.info(f"serving the oracle at {os.environ['KERASTUNER_ORACLE_IP']}:"
                    f"{os.environ['KERASTUNER_ORACLE_PORT']} until the workers have run every trial; start each worker "
                    "with the same command and its own KERASTUNER_TUNER_ID")
    elif part == "worker":
        logger.info(f"worker {os.environ['KERASTUNER_TUNER_ID']}: asking the oracle at "
                    f"{os.environ['KERASTUNER_ORACLE_IP']}:{os.environ['KERASTUNER_ORACLE_PORT']} for trials")
    # KerasTuner prints the traceback of every failed trial (`keras_tuner.src.config.DEBUG`, on by default; it
    # has no public switch): the sweep prints one line per failed trial instead, and the traceback stays in
    # its trial.json. Switched off for the search only.
    from keras_tuner.src import config as keras_tuner_config

    debug, keras_tuner_config.DEBUG = keras_tuner_config.DEBUG, False
    try:
        tuner.search(verbose=0)
    except RuntimeError as error:  # KerasTuner: consecutive failed trials, or the oracle's port in use
        text = str(error)
        if "consecutive failures" in text:
            raise SweepStopped(f"the sweep stopped: {tuner.oracle.max_consecutive_failed_trials} trials failed in a "
                               f"row, the last with: {last_line(text)}; fix the cause and rerun (failed trials "
                               "run again)") from None
        raise SweepStopped(f"the sweep stopped: {last_line(text)}") from None
    finally:
        keras_tuner_config.DEBUG = debug
    return SweepSummary(role=part, trials=tuple(tuner.summary()))
