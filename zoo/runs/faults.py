"""The fault hook: a kill -9 at a named write step, for the tests that check a kill at any instant of a
run's writes leaves something a rerun resumes exactly (tests/test_faults.py).

Every step of an epoch's checkpoint (and of the end of training) calls `fault_point(step, epoch)` right
after its write. When the environment variable `NLI_ZOO_FAULT_AT` names that step, as `STEP` (its first
occurrence) or `STEP@EPOCH` (its occurrence at the end of epoch EPOCH, counted from 1), the process kills
itself with SIGKILL there: no `finally`, no `atexit`, as a power cut or the OOM killer would. Unset (the
normal case), a step costs one dictionary lookup.

```
NLI_ZOO_FAULT_AT=state@2 python train.py ...   # killed right after epoch 2's backup/state.json
```

The steps, in the order an epoch writes them (`STEPS`): `best` (the generation's best weights, only in an
epoch that improved), `history` (`history.json`), `weights` (the generation's model and optimizer
weights), `state` (`backup/state.json`, the commit), `prune` (the files of the generation before the
previous one deleted), `publish` (`best.weights.h5` copied from the generation, only when the best
changed); and
at the end of training `finished` (`history.json` marked finished), `results` (`results.json`) and
`cleanup` (`backup/` removed).
"""

import os
import signal

FAULT_ENV = "NLI_ZOO_FAULT_AT"

EPOCH_STEPS = ("best", "history", "weights", "state", "prune", "publish")
END_STEPS = ("finished", "results", "cleanup")
STEPS = EPOCH_STEPS + END_STEPS


def fault_point(step, epoch=None):
    """Kills this process right after `step` when `NLI_ZOO_FAULT_AT` asks for it (see the module).

    Args:
        step: one of `STEPS`.
        epoch: the epoch (from 1) whose write this is, None for the steps at the end of training.
    """
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    name, _, at = wanted.partition("@")
    if name == step and (not at or (epoch is not None and at.strip() == str(epoch))):
        kill(step, epoch)


def kill(step, epoch):
    """Ends the process at once, as kill -9 would (tests replace it to stop a run in-process)."""
    os.kill(os.getpid(), signal.SIGKILL)
