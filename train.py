"""Trains an nli-zoo model with its paper preset (the same as `nli-zoo train`).

Example:
```
python train.py --model rocktaschel_wbw                      # SNLI via tensorflow-datasets, the paper's vectors
python train.py --model bowman_lstm --dataset snli_sample --embeddings none --epochs 2
python train.py --model rocktaschel_wbw --data-dir ~/snli_1.0 --embeddings ~/GoogleNews-300.txt.gz \
    --set learning_rate=3e-4 --set dropout=0.2
```
Rerunning the same command after an interruption resumes from the last finished epoch. See
docs/training.md for every option, the run directory, strategies, mixed precision and TensorBoard.
The work is done by `zoo.commands.train` and `zoo.training`, which Python code can call directly.
"""

from zoo.commands.train import main  # noqa: F401 (for Python callers: train.main(argv))

if __name__ == "__main__":
    from zoo.commands import run

    run("train")
