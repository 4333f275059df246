"""Every model of the zoo; importing this package registers them all."""

from zoo.models.base import NLIModel
from zoo.models.bowman_lstm import BowmanLSTM
from zoo.models.rocktaschel_attention import RocktaschelAttention
from zoo.models.rocktaschel_conditional import RocktaschelConditional
from zoo.models.rocktaschel_wbw import RocktaschelWordByWord

__all__ = ["NLIModel", "BowmanLSTM", "RocktaschelAttention", "RocktaschelConditional",
           "RocktaschelWordByWord"]
