"""Training's write steps for the one kill hook (`zoo.fileio.faults`): a kill -9 at a named write step, for the
tests and the fault sweep that check a kill at any instant of a run's writes leaves something a rerun resumes
exactly (tests/test_protocol.py, scripts/fault_sweep.py).

Every write of a run calls `fault_point(step, epoch)` right after it. When the environment variable
`NLI_ZOO_FAULT_AT` names that step, as `STEP` (its first occurrence) or `STEP@EPOCH` (its occurrence at the
end of epoch EPOCH, counted from 1; 0 for the writes before the first epoch), the process kills itself with
SIGKILL there: no `finally`, no `atexit`, as a power cut or the OOM killer would. Unset (the normal case), a
step costs one dictionary lookup.

```
NLI_ZOO_FAULT_AT=state@2 python train.py ...   # killed right after epoch 2's backup/state.json
```

The steps, in the order a run writes them:
- before the first epoch (`START_STEPS`, at epoch 0): `config` (`config.json`, the run's first write: from
  then on the folder is a run directory), `vocab` (`vocab.txt`, when it was missing), and for a run started
  from another (`--init-from`, `INIT_STEPS`): `weights`, `state`, `prune` of epoch 0 (the copied weights,
  committed as the state's epoch 0); then, in every process, `started` (`manifest.json` once the state is
  restored);
- a finished run trained further (`EXTENSION_STEPS`, at its epoch N): `extend:best` (its best weights copied
  into the backup), `state@N`, `prune@N` (committed as generation N, with the extension's target),
  `extend:history`, `extend:results` (`results.json` set aside as `results.previous.json`), `manifest@N`;
- each epoch (`EPOCH_STEPS`): `best` (the epoch named the best, only in an epoch that improved: nothing is
  written there, its weights file is the best weights), `history` (`history.json`), `weights` (the
  generation's model and optimizer weights), `state`
  (`backup/state.json`, the commit), `prune` (the files of the generation before the previous one deleted),
  `publish` (`best.weights.h5` copied from the generation, only when the best changed), `manifest`
  (`manifest.json`);
- at the end of training (`END_STEPS`): `finished` (`history.json` marked finished), `results`
  (`results.json`), `sealed` (`manifest.json` with the results) and `cleanup` (`backup/` removed).
"""

from zoo.fileio.faults import FAULT_VARIABLE as FAULT_ENV
from zoo.fileio.faults import fault_point

__all__ = ["END_STEPS", "EPOCH_STEPS", "EXTENSION_STEPS", "FAULT_ENV", "INIT_STEPS", "START_STEPS", "STEPS",
           "fault_point"]

START_STEPS = ("config", "vocab", "started")
INIT_STEPS = ("weights", "state", "prune")  # at epoch 0, between `vocab` and `started`
EXTENSION_STEPS = ("extend:best", "state", "prune", "extend:history", "extend:results", "manifest")
EPOCH_STEPS = ("best", "history", "weights", "state", "prune", "publish", "manifest")
END_STEPS = ("finished", "results", "sealed", "cleanup")
STEPS = EPOCH_STEPS + END_STEPS
