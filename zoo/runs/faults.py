"""Training's write steps for the one kill hook (`zoo.fileio.faults`): a kill -9 at a named write step, for the tests that check a kill at any instant of a
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

from zoo.fileio.faults import FAULT_VARIABLE as FAULT_ENV
from zoo.fileio.faults import fault_point

__all__ = ["END_STEPS", "EPOCH_STEPS", "FAULT_ENV", "STEPS", "fault_point"]

EPOCH_STEPS = ("best", "history", "weights", "state", "prune", "publish")
END_STEPS = ("finished", "results", "cleanup")
STEPS = EPOCH_STEPS + END_STEPS
