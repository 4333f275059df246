"""The one kill hook of the zoo, for the fault tests: `NLI_ZOO_FAULT_AT` makes the process SIGKILL itself at
a named write step.

Every writer that must survive a kill at any instant (training's checkpoints, `zoo.runs.faults` names its
steps; exports, `zoo.export.exporting.FAULT_STEPS`; presets, `zoo.presets.saving.FAULT_STEPS`) calls
`fault_point(step)` right after each write, so a test can kill a command at exactly one of them (by a hook
between the writes, not by timing) and check what the next command finds. The variable holds `STEP` (its
first occurrence), `STEP@EPOCH` (a training step at the end of epoch EPOCH, counted from 1), or several of
these separated by commas. The process then ends as kill -9 would end it: no `finally`, no `atexit`.
Unset (always, outside the tests), a step costs one dictionary lookup.

```
NLI_ZOO_FAULT_AT=state@2 python train.py ...                  # right after epoch 2's backup/state.json
NLI_ZOO_FAULT_AT=export:tflite:staged python export.py ...    # an export killed before it moves in
```
"""

import os
import signal

FAULT_VARIABLE = "NLI_ZOO_FAULT_AT"


def fault_point(step, epoch=None):
    """Kills this process right after `step` when `NLI_ZOO_FAULT_AT` asks for it (see the module).

    Args:
        step: the step's name (e.g. `"weights"`, `"export:tflite:staged"`, `"preset:files"`).
        epoch: the epoch (from 1) whose write this is, for training's steps; None otherwise.
    """
    wanted = os.environ.get(FAULT_VARIABLE)
    if not wanted:
        return
    for point in wanted.split(","):
        name, _, at = point.strip().partition("@")
        if name == step and (not at or (epoch is not None and at.strip() == str(epoch))):
            kill(step, epoch)


def kill(step, epoch=None):
    """Ends the process at once, as kill -9 would (tests replace it to stop a command in-process)."""
    os.kill(os.getpid(), signal.SIGKILL)
