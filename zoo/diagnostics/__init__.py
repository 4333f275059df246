"""Diagnostics: what a trained model has really learned, in one call.

`run_suite(predictor, sets)` scores a model on challenge sets (Breaking NLI, HANS, SNLI hard, Naik et al.'s
stress tests, ANLI), on generated behaviour tests (negation, antonyms, hypernyms, numbers, counting,
argument swap, word order, typos, irrelevant additions: no data needed) and against baselines that read
less than the model (hypothesis only, lexical overlap); it prints a table per set and writes
`diagnostics.json`, a PNG per set and TensorBoard scalars. See docs/diagnostics.md.

```python
from zoo.diagnostics import run_suite
from zoo.predictors import open_predictor

report = run_suite(open_predictor("runs/esim"), {"hans": "hans/heuristics_evaluation_set.txt", "behaviour": True},
                   out_dir="runs/esim/diagnostics", logdir="runs/esim/logs")
```
"""

from zoo.diagnostics.report import format_report
from zoo.diagnostics.suite import SETS, run_suite

__all__ = ["SETS", "format_report", "run_suite"]
