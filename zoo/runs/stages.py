"""What a rerun of `train.py` does with its run directory (`zoo.runs.layout.prepare_run_dir` decides it)."""

import enum


class RunStage(enum.Enum):
    """The stage a run directory is in when training is asked for (its value: the word the zoo prints).

    - `NEW`: nothing to resume; the run starts from epoch 1 (or from the `--init-from` run's weights).
    - `RESUME`: the same settings, training unfinished: from its state, or epoch 1 when nothing was committed.
    - `EVALUATE`: the same settings, training finished but no results yet: the best weights are scored.
    - `FINISHED`: results exist; nothing is trained.
    - `EXTEND`: results exist and more epochs than the run trained are asked for: it trains further.
    """

    NEW = "new"
    RESUME = "resume"
    EVALUATE = "evaluate"
    FINISHED = "finished"
    EXTEND = "extend"
