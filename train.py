"""Trains an nli-zoo model with its paper preset.

Example:
```
python train.py --model rocktaschel_wbw                      # SNLI via tensorflow-datasets, GloVe 6B 50d
python train.py --model bowman_lstm --dataset snli_sample --embeddings none --epochs 2
python train.py --model rocktaschel_wbw --data-dir ~/snli_1.0 --embeddings ~/GoogleNews-300.txt.gz \
    --set learning_rate=3e-4 --set dropout=0.2
```
Rerunning the same command after an interruption resumes from the last finished epoch. See
docs/training.md for every option, the run directory, strategies, mixed precision and TensorBoard.
The work is done by `zoo.training.trainer`, which Python code can call directly.
"""

import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from zoo.training.cli import build_parser  # noqa: E402
from zoo.training.inputs import TrainError  # noqa: E402


def main(argv=None):
    """Runs `train.py` with `argv` (default `sys.argv[1:]`).

    Returns:
        the dict of `zoo.training.trainer.train(args)`; on a user error prints one line to stderr and
        exits with status 2.
    """
    args = build_parser().parse_args(argv)
    from zoo.training import compile_cache

    compile_cache.enable(args.compile_cache, backend="tensorflow")  # before TensorFlow starts
    # tf.data datasets of unknown length end each epoch this way; Keras warns every epoch.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    from zoo.training.trainer import train

    try:
        return train(args)
    except TrainError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
