"""The statistics of a comparison, computed by scipy: a bootstrap interval of an accuracy, the paired
bootstrap of the difference between two accuracies on the same items, McNemar's exact test.

Each works on per-item values: 1 where a run labelled the item right, 0 where wrong, and for a group of
runs that differ only by seed, the fraction of its runs that got the item right (so that the group's
accuracy, the mean over seeds, is the mean over items of these fractions).
"""

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 5000
_BATCH = 200  # resamples scipy draws at once: 200 x 9,824 SNLI test items stay under 16 MB


def bootstrap_interval(values, resamples=RESAMPLES, seed=0, confidence=CONFIDENCE):
    """The percentile bootstrap interval of the mean of per-item `values` (`scipy.stats.bootstrap`): how
    far the accuracy could move were the test items drawn again from the same distribution.

    Returns:
        `(low, high)`, or None for fewer than two items.
    """
    values = np.asarray(values, dtype="float64")
    if len(values) < 2:
        return None
    if np.all(values == values[0]):  # every resample has the same mean
        return float(values[0]), float(values[0])
    result = stats.bootstrap((values,), np.mean, n_resamples=resamples, confidence_level=confidence,
                             method="percentile", vectorized=True, batch=_BATCH, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_bootstrap(a, b, resamples=RESAMPLES, seed=0, confidence=CONFIDENCE):
    """The paired bootstrap of `mean(a) - mean(b)` over the same items (resampled together).

    The p-value is the two-sided percentile bootstrap's: twice the smaller share of resampled differences
    on either side of 0 (with one added to the count and to the resamples, so it is never 0), which is below
    `1 - confidence` exactly when the interval leaves 0 out.

    Returns:
        `{"difference", "interval": [low, high], "p_value"}`.

    Raises:
        ValueError: `a` and `b` of different lengths.
    """
    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same items: {len(a)} and {len(b)}")
    differences = a - b
    observed = float(differences.mean()) if len(differences) else 0.0
    if len(differences) < 2 or np.all(differences == differences[0]):
        return {"difference": observed, "interval": [observed, observed], "p_value": 1.0 if observed == 0 else 0.0}
    result = stats.bootstrap((differences,), np.mean, n_resamples=resamples, confidence_level=confidence,
                             method="percentile", vectorized=True, batch=_BATCH,
                             rng=np.random.default_rng(seed))
    resampled = result.bootstrap_distribution
    below, above = np.sum(resampled <= 0), np.sum(resampled >= 0)
    p_value = min(1.0, 2 * (min(below, above) + 1) / (len(resampled) + 1))
    return {"difference": observed, "interval": [float(result.confidence_interval.low),
                                                 float(result.confidence_interval.high)], "p_value": float(p_value)}


def mcnemar(correct_a, correct_b):
    """McNemar's exact test on the items two runs disagree on: under no difference, each of the `b + c`
    discordant items is as likely to favour either run (`scipy.stats.binomtest(b, b + c, 0.5)`).

    Args:
        correct_a, correct_b: per-item booleans (the same items).

    Returns:
        `{"a_only": b, "b_only": c, "p_value"}` (b: items only run A got right; p 1.0 without discordant items).
    """
    correct_a, correct_b = np.asarray(correct_a, bool), np.asarray(correct_b, bool)
    if correct_a.shape != correct_b.shape:
        raise ValueError(f"paired values need the same items: {len(correct_a)} and {len(correct_b)}")
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    p_value = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    return {"a_only": only_a, "b_only": only_b, "p_value": float(p_value)}


def spread(values):
    """`{"mean", "std", "n"}` of per-run values (std: the sample standard deviation, None for one run)."""
    values = np.asarray([v for v in values if v is not None], dtype="float64")
    if not len(values):
        return {"mean": None, "std": None, "n": 0}
    return {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else None,
            "n": int(len(values))}
