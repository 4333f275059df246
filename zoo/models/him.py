"""Chen et al. (2017): the Hybrid Inference Model (HIM), ESIM and the syntactic tree-LSTM model averaged."""

from keras import ops

from zoo.models.base import NLIModel
from zoo.models.esim import ESIM, ESIM_DATA, ESIM_TRAIN
from zoo.models.syntactic_tree_lstm import SYNTACTIC_MAX_DEPTH, SyntacticTreeLSTM
from zoo.registry import get_preset, register_model

_TINY = 1e-12
_MEMBER_ARGS = ("vocabulary_size", "embedding_dim", "tunable_words", "num_tunable", "num_classes")
# Each member's registered name: its sizes are that preset's, with the ensemble's own settings over them.
_MEMBER_PRESETS = {"esim": "esim", "tree": "syntactic_tree_lstm"}


def member_settings(member, **settings):
    """The constructor settings of HIM's `member` (`"esim"` or `"tree"`): its registered preset's model
    section with `settings` (the ensemble's) over it."""
    return {**get_preset(_MEMBER_PRESETS[member]).model, **settings}


class MemberEmbeddings:
    """`HIM.embedding`: the word-vector layers of both members seen as one (the ensemble has none of its own).

    Code that treats the word vectors apart from the other weights (the ℓ2 penalty, copying weights between
    models) reads `weights`; there is no single lookup to call, since each member embeds with its own vectors
    (`him.esim.embedding`, `him.tree.embedding`)."""

    def __init__(self, model):
        self._model = model

    @property
    def layers(self):
        return [self._model.esim.embedding, self._model.tree.embedding]

    @property
    def weights(self):
        return [w for layer in self.layers for w in layer.weights]


@register_model("him",
                model={"hidden_size": 300, "dropout": 0.5, "trees": "syntactic", "max_depth": SYNTACTIC_MAX_DEPTH,
                       "complete_trees": "padded"},
                train=ESIM_TRAIN, data=ESIM_DATA,
                paper="Chen et al. 2017, Table 1 '(17) HIM (600D ESIM + 300D Syntactic tree-LSTM)'; "
                      "with trees='complete': Table 2 '(18) ESIM + tree'",
                paper_params=7_700_000, attention=("attention", "attention_reverse"))
class HIM(NLIModel):
    """HIM (Chen et al. 2017, §3.3 "Overall inference models"): an `esim` and a `syntactic_tree_lstm`
    whose predicted probabilities are averaged:

        p(y | a, b) = (p_ESIM(y | a, b) + p_tree(y | a, b)) / 2

    The logits are log p (so softmax(logits) = p and the usual from-logits loss applies). Each member
    has its own word vectors, as when trained alone. The paper trains the two models separately and
    averages them (`train.py --model him --members ESIM_RUN TREE_RUN`; `HIM.from_members(esim, tree)`
    builds the ensemble from two trained models).

    Fitting a `HIM` directly (`train.py --model him` without `--members`) trains both members at once,
    which is *not* the same as training each alone:

    - Loss: `compute_loss` returns the sum of each member's own cross-entropy (a loss on the averaged
      probabilities would let the better member starve the other of gradient). The members share no
      weight, so each member's gradient is exactly the one it would get alone on the same batch. The
      reported training loss is that sum (about twice a single model's); the metrics (accuracy) are
      the ensemble's.
    - Optimiser: one optimiser updates both. Adam's moments are per weight, so they stay separate,
      but the preset's gradient clipping (`global_clipnorm`, 10 for ESIM) takes the norm of *both*
      members' gradients together: whenever the joint norm exceeds it, both members' gradients are
      scaled by the same factor, so a large gradient of one member shortens the other's step. Alone,
      each would be clipped against its own norm only. (Clipping per member would need a per-group
      optimiser or train step; the zoo's models do not change how the optimiser applies gradients.)
    - Selection: every callback that reads the dev accuracy (the best checkpoint, early stopping, a
      learning-rate schedule on dev plateaus) reads the *ensemble's*, so both members stop at the same
      epoch and the kept weights are those of the ensemble's best epoch, not each member's best.
    - Data: both members see the same batches in the same order; their dropout masks differ.

    For the paper's procedure train the members separately and combine them with `--members`.

    Each member is built from its own paper preset (`esim`, `syntactic_tree_lstm`) with the ensemble's
    settings over it: ESIM's tanh layers (`mlp_layers`) are the `esim` preset's.

    Args:
        hidden_size: H of both members (preset: 300).
        dropout: both members' dropout rate (preset: 0.5).
        trees: the tree member's trees: `"syntactic"` (Table 1 row 17; parses from the inputs'
            `premise_tree` / `hypothesis_tree`, complete trees when absent) or `"complete"` (Table 2 row 18).
        max_depth: the tree member's `max_depth`.
        complete_trees: the tree member's `complete_trees` (`"padded"`: Chen et al.'s full binary tree).
        **kwargs: `NLIModel` arguments (both members get them).

    `explain()` returns ESIM's `attention` `[B, Lh, Lp]` / `attention_reverse` `[B, Lp, Lh]` over words,
    the tree member's node maps as `tree_attention` `[B, Nh, Np]` / `tree_attention_reverse` with
    `tree_premise_mask` / `tree_hypothesis_mask`, and each member's `esim_probabilities` /
    `tree_probabilities`.
    """

    member_names = ("esim", "tree")  # explain() returns f"{name}_probabilities" for each
    embeds_words = False  # each member looks up its own word vectors

    def __init__(self, *, hidden_size, dropout, trees, max_depth, complete_trees, **kwargs):
        super().__init__(**kwargs)
        members = {k: kwargs[k] for k in _MEMBER_ARGS if k in kwargs}
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.trees = trees
        self.max_depth = max_depth
        self.complete_trees = complete_trees
        shared = {"hidden_size": hidden_size, "dropout": dropout}
        self.esim = ESIM(**member_settings("esim", **shared), name="esim", **members)
        self.tree = SyntacticTreeLSTM(**member_settings("tree", **shared, trees=trees, max_depth=max_depth,
                                                        complete_trees=complete_trees), name="tree", **members)

    @classmethod
    def from_members(cls, esim, tree):
        """The ensemble of a trained `esim` and a trained `syntactic_tree_lstm` / `esim_tree` (weights copied)."""
        config = {k: v for k, v in tree.get_config().items()
                  if k in _MEMBER_ARGS + ("hidden_size", "dropout", "trees", "max_depth", "complete_trees")}
        model = cls(**config)
        model.build_with_dummy_batch()
        model.esim.set_weights(esim.get_weights())
        model.tree.set_weights(tree.get_weights())
        return model

    def forward(self, inputs, training=False, xla=None):
        xla = self.compiles_with_xla() if xla is None else bool(xla)
        esim = self.esim.forward(inputs, training=training, xla=xla)
        tree = self.tree.forward(inputs, training=training, xla=xla)
        esim_p = ops.softmax(ops.cast(esim["logits"], "float32"), axis=-1)
        tree_p = ops.softmax(ops.cast(tree["logits"], "float32"), axis=-1)
        probabilities = (esim_p + tree_p) / 2.0
        return {"logits": ops.log(ops.maximum(probabilities, _TINY)),
                "attention": esim["attention"], "attention_reverse": esim["attention_reverse"],
                "tree_attention": tree["attention"], "tree_attention_reverse": tree["attention_reverse"],
                "tree_premise_mask": tree["premise_mask"], "tree_hypothesis_mask": tree["hypothesis_mask"],
                "esim_probabilities": esim_p, "tree_probabilities": tree_p,
                "esim_logits": esim["logits"], "tree_logits": tree["logits"]}

    @property
    def embedding(self):
        """Both members' word vectors (`MemberEmbeddings`)."""
        return MemberEmbeddings(self)

    def build(self, input_shape=None):
        """Creates both members' weights (ESIM's, then the tree model's, as the forward pass uses them); a
        member built already (`set_embeddings` builds them) is kept."""
        for member in (self.esim, self.tree):
            if not member.built:
                member.build(input_shape)
        self.built = True

    @property
    def lstm_loop(self):
        """The loop asked of the ESIM member's bi-LSTMs (`NLIModel.lstm_loop`)."""
        return self.esim.lstm_loop

    @lstm_loop.setter
    def lstm_loop(self, value):
        self.esim.lstm_loop = value

    def call(self, inputs, training=False, xla=None):
        outputs = self.forward(inputs, training=training, xla=xla)
        if training:  # read by compute_loss within the same training step (same trace)
            self._member_logits = (outputs["esim_logits"], outputs["tree_logits"])
        return outputs["logits"]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """While training, the sum of each member's own loss (each member's gradient is the one it would
        get alone; the optimiser's clipping and the dev-accuracy callbacks still couple them: see the
        class docstring), while predictions and metrics use the averaged probabilities."""
        members = getattr(self, "_member_logits", None)
        self._member_logits = None
        if not training or members is None:
            return super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training)
        return sum(super(HIM, self).compute_loss(x=x, y=y, y_pred=logits, sample_weight=sample_weight,
                                                 training=training) for logits in members)

    def set_embeddings(self, matrix, tunable_mask=None):
        """Loads the same pretrained vectors into both members."""
        if not self.built:
            self.build()
        self.esim.set_embeddings(matrix, tunable_mask)
        self.tree.set_embeddings(matrix, tunable_mask)

    def count_params_without_embeddings(self):
        return self.esim.count_params_without_embeddings() + self.tree.count_params_without_embeddings()

    @property
    def reads_parse_trees(self):
        return self.tree.reads_parse_trees

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, dropout=self.dropout, trees=self.trees,
                      max_depth=self.max_depth, complete_trees=self.complete_trees)
        return config

