"""Settings on their own floor, below every layer that reads them: `values` (one validator per kind of value a
user gives, shared by every command and every settings section) and `sections` (a paper preset's sections
typed, `TrainSettings`, `DataSettings`, `RunSettings`, and the one default of each setting)."""

from zoo.settings.sections import (
                                   DECAY_KINDS,
                                   OOV_RULES,
                                   OPTIMIZERS,
                                   TUNABLE_WORDS,
                                   DataSettings,
                                   LearningRateDecay,
                                   RunSettings,
                                   TrainSettings,
                                   tunable_words_for,
)

__all__ = ["DECAY_KINDS", "OOV_RULES", "OPTIMIZERS", "TUNABLE_WORDS", "DataSettings", "LearningRateDecay",
           "RunSettings", "TrainSettings", "tunable_words_for"]
