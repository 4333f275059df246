"""Figures of record as data: the machine a figure was taken on (`machine`), one record file per machine
and benchmark under `results/` (`record`), the tables of README.md and docs/ rendered from those files
(`render`), and the one way a measuring subprocess hands its result to its parent (`child`).

A top-level wing: the benchmarks in `scripts/` and `scripts/render_results.py` use it; nothing else in
`zoo` imports it. Standard library only at import (the GEMM measurement imports TensorFlow in its own
subprocess).
"""
