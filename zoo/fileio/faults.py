"""A kill hook for the fault tests: `NLI_ZOO_FAULT_AT=STEP` makes the process SIGKILL itself at `fault_point(STEP)`.

The writers of the zoo call `fault_point("export:tflite:staged")` and the like between their writes, so a test
can kill a command at exactly one of them (by a hook between the writes, not by timing) and check what the
next command finds. Step names start with the part of the zoo that writes (`export:`, `train:`). Without the
variable (always, outside the tests) it does nothing.
"""

import os
import signal

FAULT_VARIABLE = "NLI_ZOO_FAULT_AT"


def fault_point(step):
    """SIGKILLs this process when `NLI_ZOO_FAULT_AT` names `step` (a comma-separated list may name several)."""
    wanted = os.environ.get(FAULT_VARIABLE)
    if wanted and step in wanted.split(","):
        os.kill(os.getpid(), signal.SIGKILL)
