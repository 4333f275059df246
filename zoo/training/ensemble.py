"""Chen et al.'s HIM ensemble of two finished runs (`train.py --model him --members ESIM_RUN TREE_RUN`).

Chen et al. (2017) train ESIM and the tree model separately and average their probabilities
(`zoo.models.him.HIM`). The combination is evaluated and written as a run of its own, so that `zoo.load`
and `export.py` treat it like any other run.
"""

import logging
import os

from zoo.data.tokenizer import Tokenizer
from zoo.errors import TrainError
from zoo.models.him import HIM
from zoo.runs import layout, load_run
from zoo.runs.directory import RunDirectory
from zoo.runs.evaluation import evaluate_examples
from zoo.runs.record import RunRecord, save_record
from zoo.runs.results import RunResults
from zoo.training import inputs
from zoo.training.model import parameter_counts
from zoo.training.outcome import TrainOutcome

logger = logging.getLogger(__name__)


def combine_members(config):
    """Combines `config.members` into the HIM ensemble, evaluates it and writes its run directory.

    Args:
        config: the run's `RunConfig` (`model="him"`, `members=(esim_run, tree_run)`).

    Returns:
        a `zoo.training.outcome.TrainOutcome` (the combined model, its `RunResults` and `RunRecord`).

    Raises:
        TrainError: when the runs are not an esim run and a tree run over the same vocabulary.
    """
    try:
        esim_run, tree_run = (load_run(run_dir) for run_dir in config.members)
    except (FileNotFoundError, ValueError) as error:
        raise TrainError(f"cannot load a member run: {error}") from None
    kinds = (esim_run.record.model, tree_run.record.model)
    if kinds[0] != "esim" or kinds[1] not in ("syntactic_tree_lstm", "esim_tree"):
        raise TrainError(f"--members takes an esim run, then a syntactic_tree_lstm or esim_tree run; got {kinds}")
    if esim_run.vocab.words != tree_run.vocab.words or esim_run.record.lowercase != tree_run.record.lowercase:
        raise TrainError("the member runs have different vocabularies or tokenizers: train both on the same "
                         "data with the same settings")
    try:
        model = HIM.from_members(esim_run.model, tree_run.model)
    except ValueError as error:
        raise TrainError(f"the member runs do not fit one HIM (sizes differ?): {error}") from None
    # The ensemble's preset is the tree member's where they describe the tree model and its data.
    tree_model = tree_run.settings.model
    settings = config.settings.replace(
        model={k: tree_model[k] for k in ("hidden_size", "dropout", "trees", "max_depth") if k in tree_model},
        data=tree_run.settings.data.to_json())
    config = config.replace(settings=settings)
    run_dir = config.run_dir
    if os.path.exists(run_dir) and set(os.listdir(run_dir)) - layout.KEPT and not config.overwrite:
        raise TrainError(f"{run_dir} is not empty (pass --overwrite or another --run-dir)")
    if config.overwrite and os.path.exists(run_dir):
        layout.clear_run_dir(run_dir)
    tree = tree_run.record
    record = RunRecord.from_json(dict(
        config.to_json(), vocabulary_size=tree.vocabulary_size, embedding_dim=tree.embedding_dim,
        tunable_words=tree.tunable_words, num_tunable=tree.num_tunable, tokenizer=tree.tokenizer_config,
        labels=list(tree.labels), members=[os.path.abspath(d) for d in config.members], manifest=True))
    save_record(run_dir, record)
    tree_run.vocab.save(os.path.join(run_dir, layout.VOCAB_FILE))
    layout.save_weights(model, os.path.join(run_dir, layout.BEST_WEIGHTS_FILE))

    splits, _ = inputs.load_splits(config.source, config.max_train_examples, config.max_eval_examples,
                                   required=("validation", "test"), fields=config.fields, labels=config.labels,
                                   roles=config.roles)
    tokenizer = Tokenizer.from_config(record.tokenizer_config)
    results = RunResults(
        model="him", run_dir=run_dir, members=record.members,
        dev=evaluate_examples(model, splits["validation"], tree_run.vocab, tokenizer, config.settings),
        test=evaluate_examples(model, splits["test"], tree_run.vocab, tokenizer, config.settings),
        epochs_run=0, history=[], parameters=parameter_counts(model))
    RunDirectory(run_dir).write_results(results)  # sealed by the run's manifest, as a trained run's results
    return TrainOutcome(run_dir, results, record, model=model)
