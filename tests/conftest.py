"""Test-session settings shared by every test module and the subprocesses the tests start, and the pytest
fixtures that several test files share (plain helpers are in tests/support/).

XLA compiles each jitted step (TensorFlow with `jit_compile=True`, every JAX training step) with full
LLVM optimisation by default. The tests check what a compiled step computes, not how fast it runs, so
the suite asks XLA for its cheapest backend optimisation: compilation takes about a third less time and
the results are the same within the tests' tolerances. Set XLA_FLAGS yourself to test another setting.

Every test process (the xdist workers and the commands they start) runs TensorFlow's, oneDNN's and XLA's
kernels on one thread (`TF_NUM_INTRAOP_THREADS`, `OMP_NUM_THREADS`, XLA's `intra_op_parallelism_threads`):
the two workers and the processes they start already fill both cores, and thread pools sized for the whole
machine in each of them spent about a quarter of the suite's CPU time waiting on each other (whole suite on
the idle 2-core machine: 2,434 s of CPU and 21:17 with the pools, 1,822 s and 16:56 without). The variables
are defaults: set one yourself to test another setting. Inter-op threads stay TensorFlow's (collectives of
the mirrored tests need two).

The two xdist workers take whole files (pytest.ini: `--dist loadfile`), so that a file's module fixtures (a
trained run, a reproduction, the exports of each model class) are built once, not once per worker; the files
that take longest start first, so that the two workers end together: their seconds are those of the last
whole run `python scripts/suite_time.py --schedule` measured (tests/durations.json, which says where and
when); a file it does not know (a new one) starts after them.

The suite has two tiers (pytest.ini's `large` marker): `python -m pytest -q -m "not large"` is the fast tier
(unit and contract tests, and every registered model through the per-model harness), to run after every
change; `python -m pytest -q` (README's test command, what CI runs) is the whole suite, the large tier
(exports, TFLite, fresh processes, overfitting, XLA, JAX, clusters, kill chains, the docs' examples) with it.
"""

import json
import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
                      " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
for _name in ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

SCHEDULE = Path(__file__).with_name("durations.json")


def file_seconds(path=SCHEDULE):
    """`{test file name: seconds}` of the schedule (empty without one: the files then run in pytest's order;
    a damaged one is said in a warning)."""
    try:
        seconds = json.loads(path.read_text(encoding="utf-8"))["seconds"]
        return {str(name): float(value) for name, value in seconds.items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        warnings.warn(f"{path}: not a schedule ({type(error).__name__}: {error}); the files run in pytest's order; "
                      "write it again with python scripts/suite_time.py --schedule")
        return {}


def pytest_collection_modifyitems(items):
    """The longest files first, each file's tests in their own order (a stable sort)."""
    seconds = file_seconds()
    items.sort(key=lambda item: -seconds.get(item.path.name, 0.0))


@pytest.fixture(scope="module")
def finished_run_dir(tmp_path_factory):
    """A finished tiny run of `bowman_lstm` built through the library (`tests.support.runs.finished_run`:
    untrained weights, hidden size 8, 8-d vectors, the results.json of a finished train.py run), one per test
    module that asks for it. Tests copy it before damaging anything."""
    from tests.support.runs import finished_run  # here: importing it imports TensorFlow

    return finished_run(str(tmp_path_factory.mktemp("finished") / "bowman_lstm"), "bowman_lstm")


@pytest.fixture(autouse=True)
def zoo_messages():
    """Every test starts with the zoo's messages printed as the commands print them (INFO, one handler:
    `zoo.commands.messages`), whatever an earlier test's `--quiet` or `setLevel` left, so that a test of the
    library reads the lines a command would print."""
    from zoo.commands.messages import show_messages

    show_messages()
