"""Test-session settings shared by every test module and the subprocesses the tests start, and the pytest
fixtures that several test files share (plain helpers are in tests/support/).

XLA compiles each jitted step (TensorFlow with `jit_compile=True`, every JAX training step) with full
LLVM optimisation by default. The tests check what a compiled step computes, not how fast it runs, so
the suite asks XLA for its cheapest backend optimisation: compilation takes about a third less time and
the results are the same within the tests' tolerances. Set XLA_FLAGS yourself to test another setting.
"""

import os

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")


@pytest.fixture(scope="module")
def finished_run_dir(tmp_path_factory):
    """A finished tiny run of `bowman_lstm` built through the library (`tests.support.runs.finished_run`:
    untrained weights, hidden size 8, 8-d vectors, the results.json of a finished train.py run), one per test
    module that asks for it. Tests copy it before damaging anything."""
    from tests.support.runs import finished_run  # here: importing it imports TensorFlow

    return finished_run(str(tmp_path_factory.mktemp("finished") / "bowman_lstm"), "bowman_lstm")
