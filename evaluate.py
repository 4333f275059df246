"""Scores a trained run, or an exported model, on any labelled NLI data (the same as `nli-zoo evaluate`).

Example:
```
python evaluate.py --run-dir runs/esim --data-dir ~/multinli_1.0                 # its test role: dev_mismatched
python evaluate.py --run-dir runs/esim --data-dir ~/SICK/SICK.txt --split all     # train, trial and test
python evaluate.py --saved-model models/esim --dataset snli_sample
```
The work is done by `zoo.commands.evaluate` and `zoo.runs.evaluation`.
"""

from zoo.commands.evaluate import build_parser, main  # noqa: F401

if __name__ == "__main__":
    from zoo.commands import run

    run("evaluate")
