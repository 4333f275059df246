"""The tests' shared harness, by idea (as KerasHub keeps its `TestCase` apart from its tests).

- `models`: tiny models of the registry, random batches and trees, the checks every model goes through.
- `runs`: tiny run directories built through the library, train.py's tiny command lines, the fault helpers.
- `exports`: the pairs exports answer, exports built once across xdist workers, a fresh-process loader.
- `vectors`: word-vector fixtures served from `file://` URLs, and a guard against the network.

Plain functions and constants only; pytest fixtures that several test files share are in tests/conftest.py.
Nothing here imports a `test_*.py` module (tests/test_architecture.py checks it).
"""
