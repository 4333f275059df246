"""Honest comparisons: seed sweeps on KerasTuner, and runs compared with intervals and paired tests.

- `spec`: `SweepSpec`, what a sweep trains (models x seeds x settings, or a search space), from
  `nli-zoo sweep`'s flags or a JSON/YAML file.
- `tuner`: `run_sweep`, the trials run by KerasTuner (its oracle, its distributed chief and workers), each
  trial a normal run directory trained by `zoo.training.train`.
- `runs`: the finished runs a comparison reads, grouped by everything but the seed.
- `statistics`: bootstrap intervals, the paired bootstrap of a difference, McNemar's exact test (scipy).
- `report`: the comparison as a table (Markdown), JSON, a chart and TensorBoard summaries.

See docs/comparisons.md. The modules are imported one by one (`zoo.comparison.tuner` imports KerasTuner,
which a comparison does not need).
"""
