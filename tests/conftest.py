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
trained run, a reproduction, the exports of every model) are built once, not once per worker; the files
that take longest start first (`LONGEST_FIRST`, from `--durations`), so that the two workers end together.
"""

import os

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
                      " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
for _name in ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

# Seconds of a worker each file took (`python -m pytest --durations=0`, summed per file), longest first.
LONGEST_FIRST = ("test_models.py",            # 368
                 "test_export.py",            # 335
                 "test_reliability_runs.py",  # 148
                 "test_docs_examples.py",     # 115 (every example of README and docs/, in order)
                 "test_faults.py",            # 124
                 "test_multi_worker.py",      # 102
                 "test_train.py",             # 92
                 "test_predict.py",           # 64
                 "test_export_whole.py",      # 57
                 "test_sweep.py",             # 45
                 "test_evaluate.py",          # 42
                 "test_train_trees.py",       # 40
                 "test_commands.py",          # 34
                 "test_tree_models.py")       # 32


def pytest_collection_modifyitems(items):
    """The longest files first, each file's tests in their own order (a stable sort)."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
