"""Labels sentence pairs with a run, a SavedModel or a TFLite model, and shows what the model attended to
(the same as `nli-zoo predict`).

Example:
```
python predict.py --run-dir runs/rocktaschel_wbw --premise "A man plays a guitar." \
    --hypothesis "A person makes music." --show-attention
python predict.py --saved-model models/esim --input pairs.jsonl --output predictions.jsonl
```
The work is done by `zoo.commands.predict`; see docs/serving.md.
"""

from zoo.commands.predict import build_parser, main  # noqa: F401

if __name__ == "__main__":
    from zoo.commands import run

    run("predict")
