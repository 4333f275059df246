"""Training support for `train.py`: run directories (`runs`), callbacks (TensorBoard images, hparams,
resumable history), distribution strategies (`strategy`) and the command line (`cli`).

`zoo.load(run_dir)` is `zoo.training.runs.load_run(run_dir)`.
"""

from zoo.training.runs import Run, load_run

__all__ = ["Run", "load_run"]
