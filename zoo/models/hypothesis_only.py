"""A hypothesis-only classifier: Bowman et al.'s LSTM sentence encoder reading the hypothesis alone.

It never sees the premise, so whatever it gets right it gets from annotation artifacts of the hypotheses
(Gururangan et al. 2018; Poliak et al. 2018): negation words in contradictions, vague words in
entailments, added detail in neutral pairs. `zoo.diagnostics` compares a model with it (the artifacts
report): how much of the model's test accuracy a premise-blind model reaches, and how the model fares on
the pairs this baseline gets wrong.

References:
    Gururangan, Swayamdipta, Levy, Schwartz, Bowman, Smith. Annotation Artifacts in Natural Language
    Inference Data. NAACL 2018.
    Poliak, Naradowsky, Haldar, Rudinger, Van Durme. Hypothesis Only Baselines in Natural Language
    Inference. *SEM 2018.
"""

from zoo.models.bowman_lstm import BOWMAN_DATA, BowmanLSTM
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_TRAIN
from zoo.registry import register_model


@register_model("hypothesis_only", model={"hidden_size": 100, "mlp_size": 200, "mlp_layers": 3, "dropout": 0.1},
                train=ROCKTASCHEL_TRAIN, data=BOWMAN_DATA,
                paper="hypothesis-only baseline (Gururangan et al. 2018, Poliak et al. 2018) with the encoder of "
                      "Bowman et al. 2015 as in Rocktäschel et al. 2016 §2.2 (k=100); no paper row",
                paper_params=None)
class HypothesisOnly(BowmanLSTM):
    """`bowman_lstm` (its word projection, LSTM encoder, tanh layers and softmax layer) over the hypothesis
    vector alone.

    The premise is embedded by `NLIModel.forward` like every model's (the inputs are the same) and then
    ignored: no prediction depends on it, which the tests check. Arguments as `BowmanLSTM`'s.
    """

    sentences_read = 1  # the hypothesis vector only

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        return {"logits": self.classify(self.encode(hypothesis, hypothesis_mask, training), training)}
