"""A paper's table in one command (`nli-zoo reproduce`): the rows trained as a sweep, the paper's figures
beside the measured ones, its claimed orderings as paired tests.

- `tables`: the papers' tables as data (`papers/*.json`): rows as printed, the model and settings of each,
  reported figures, data and word vectors, claims; `structure_problems` checks them.
- `plan`: `ReproductionSpec`, the rows' units x seeds as a `zoo.comparison` sweep; the reproduction
  directory; how a run departs from the paper's conditions.
- `reproduce`: the sweep run (resumable, distributable), ensemble rows combined, the report written.
- `report`, `markdown`: the report from `zoo.comparison.report.compare` (Markdown, JSON, chart, TensorBoard).
- `estimate`: `--dry-run`'s plan and time per epoch from a few timed steps.

A floor above `zoo.comparison`, below `zoo.commands` (docs/architecture.md). See docs/reproduce.md.
"""
