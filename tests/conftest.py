"""Test-session settings shared by every test module and the subprocesses the tests start.

XLA compiles each jitted step (TensorFlow with `jit_compile=True`, every JAX training step) with full
LLVM optimisation by default. The tests check what a compiled step computes, not how fast it runs, so
the suite asks XLA for its cheapest backend optimisation: compilation takes about a third less time and
the results are the same within the tests' tolerances. Set XLA_FLAGS yourself to test another setting.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")
