"""The statistics of a comparison, computed by scipy: a bootstrap interval of an accuracy (Wilson's score
interval where every item scored alike and the bootstrap has no spread), the paired bootstrap of the
difference between two accuracies on the same items, McNemar's exact test, and Holm's adjustment of the
p-values of several pairs tested together.

Each works on per-item values: 1 where a run labelled the item right, 0 where wrong, and for a group of
runs that differ only by seed, the fraction of its runs that got the item right (so that the group's
accuracy, the mean over seeds, is the mean over items of these fractions).

scipy is imported where it is used: `nli-zoo compare --help` does not pay for it.
"""

import math

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 5000
_BATCH = 200  # resamples scipy draws at once: 200 x 9,824 SNLI test items stay under 16 MB


def bootstrap_interval(values, resamples=RESAMPLES, seed=0, confidence=CONFIDENCE):
    """The percentile bootstrap interval of the mean of per-item `values` (`scipy.stats.bootstrap`): how
    far the accuracy could move were the test items drawn again from the same distribution. Where every
    item has the same value (a model right on every pair of a class, or wrong on every one) every resample
    has the same mean and the bootstrap would claim certainty: Wilson's score interval is returned instead
    (`wilson_interval`), never of zero width.

    Returns:
        `(low, high)`, or None for no items.
    """
    from scipy import stats

    values = np.asarray(values, dtype="float64")
    if not len(values):
        return None
    if interval_method(values) == "wilson":
        return wilson_interval(float(values[0]), len(values), confidence)
    result = stats.bootstrap((values,), np.mean, n_resamples=resamples, confidence_level=confidence,
                             method="percentile", vectorized=True, batch=_BATCH, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def interval_method(values):
    """How `bootstrap_interval` bounds the mean of `values`: `"bootstrap"`, or `"wilson"` where every value
    is the same (every resample would have the same mean)."""
    values = np.asarray(values, dtype="float64")
    return "wilson" if len(values) and np.all(values == values[0]) else "bootstrap"


def wilson_interval(proportion, items, confidence=CONFIDENCE):
    """Wilson's score interval (Wilson 1927) of a proportion observed on `items` items: the proportions
    whose score test at `confidence` does not reject the observed one. Unlike the bootstrap's or the normal
    approximation's, it has a width at 0 and 1 (one correct answer in one item does not prove accuracy 1).

    Written out rather than taken from `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`, which
    wants a whole number of successes: a group of seeds has fractional ones (the mean over its runs). The
    tests check it against scipy's where the count is whole.

    Returns:
        `(low, high)`.
    """
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    n, p = float(items), float(proportion)
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def p_value_floor(resamples):
    """The smallest p-value `paired_bootstrap` can give with `resamples` resamples, `2 / (resamples + 1)`:
    a difference no resample crossed 0 for has a p-value below it, not equal to it."""
    return 2 / (resamples + 1)


def holm(p_values):
    """Holm's step-down adjustment (Holm 1979) of p-values tested together: sorted ascending, the k-th of m
    is multiplied by m - k + 1, kept at least the one before it, capped at 1. Rejecting where an adjusted
    p-value is below alpha keeps the chance of any false rejection among them at most alpha.

    (scipy has no Holm adjustment, only Benjamini-Hochberg's `false_discovery_control`, which controls
    another rate.)

    Returns:
        the adjusted p-values, in the order given.
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def paired_bootstrap(a, b, resamples=RESAMPLES, seed=0, confidence=CONFIDENCE):
    """The paired bootstrap of `mean(a) - mean(b)` over the same items (resampled together).

    The p-value is the two-sided percentile bootstrap's: twice the smaller share of resampled differences
    on either side of 0 (with one added to the count and to the resamples, so it is never 0), which is below
    `1 - confidence` exactly when the interval leaves 0 out. Where no resample reached 0 it is the floor
    `p_value_floor(resamples)`, and `"p_below_floor"` is True: the p-value is below it.

    Returns:
        `{"difference", "interval": [low, high], "p_value", "p_below_floor"}`.

    Raises:
        ValueError: `a` and `b` of different lengths.
    """
    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same items: {len(a)} and {len(b)}")
    from scipy import stats

    differences = a - b
    observed = float(differences.mean()) if len(differences) else 0.0
    if len(differences) < 2 or np.all(differences == differences[0]):
        return {"difference": observed, "interval": [observed, observed], "p_value": 1.0 if observed == 0 else 0.0,
                "p_below_floor": False}
    result = stats.bootstrap((differences,), np.mean, n_resamples=resamples, confidence_level=confidence,
                             method="percentile", vectorized=True, batch=_BATCH,
                             rng=np.random.default_rng(seed))
    resampled = result.bootstrap_distribution
    below, above = np.sum(resampled <= 0), np.sum(resampled >= 0)
    p_value = min(1.0, 2 * (min(below, above) + 1) / (len(resampled) + 1))
    return {"difference": observed, "interval": [float(result.confidence_interval.low),
                                                 float(result.confidence_interval.high)], "p_value": float(p_value),
            "p_below_floor": bool(min(below, above) == 0)}


def mcnemar(correct_a, correct_b):
    """McNemar's exact test on the items two runs disagree on: under no difference, each of the `b + c`
    discordant items is as likely to favour either run (`scipy.stats.binomtest(b, b + c, 0.5)`).

    Args:
        correct_a, correct_b: per-item booleans (the same items).

    Returns:
        `{"a_only": b, "b_only": c, "p_value"}` (b: items only run A got right; p 1.0 without discordant items).
    """
    from scipy import stats

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


# Both sources of noise: the seed and the test items ----------------------------------------------------
# A run's test accuracy moves with its seed (initialisation, dropout, batch order) and with the test items
# drawn. The item-only intervals above say how the seeds' mean would move on other items; the ones below add
# the seed-to-seed spread measured between the runs (Bouthillier et al. 2021; Reimers & Gurevych 2017). The
# two variances are added: the spread between runs is measured on the same items (it holds no item noise),
# and the item variance of a mean over items is its items' variance over their number.
POWER = 0.8  # the chance of resolving a difference that `seeds_to_resolve` plans for


def item_variance(values):
    """The variance of the mean over items of per-item `values` from drawing the items again: their sample
    variance over their number (what the item bootstrap estimates, without resampling). 0 for < 2 items."""
    values = np.asarray(values, dtype="float64")
    return float(values.var(ddof=1) / len(values)) if len(values) > 1 else 0.0


def _welch_df(seed_terms, total):
    """Satterthwaite's degrees of freedom of a variance `total` whose seed parts `[(variance, runs)]` are
    estimated from few runs (the item part, from thousands of items, counts as known): infinite where the
    runs did not spread."""
    denominator = sum(variance * variance / (runs - 1) for variance, runs in seed_terms if runs > 1)
    return math.inf if denominator == 0 else total * total / denominator


def _t(confidence, df):
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, df)) if math.isfinite(df) else float(
        stats.norm.ppf(0.5 + confidence / 2))


def run_intervals(run_accuracies, values, confidence=CONFIDENCE):
    """The intervals of a row of `n` runs that differ by seed, with both sources of noise.

    With m the runs' mean accuracy, s² their sample variance (seed spread) and v the item variance of the
    per-item shares `values` (`item_variance`):

        mean:       m ± t · sqrt(s²/n + v)              where the mean of many runs would fall
        prediction: m ± t · sqrt(s² · (1 + 1/n) + v)    where one more run would fall

    t: Student's quantile at Satterthwaite's degrees of freedom (`_welch_df`; n − 1 where the seeds
    dominate). A single paper's run is held against the prediction interval. Clipped to [0, 1].

    Returns:
        `{"mean_interval", "prediction_interval", "seed_std", "item_std", "df"}`; with fewer than two runs the
        seed spread is unknown: both intervals None.
    """
    accuracies = np.asarray([a for a in run_accuracies if a is not None], dtype="float64")
    v = item_variance(values)
    entry = {"mean_interval": None, "prediction_interval": None, "seed_std": None, "item_std": math.sqrt(v),
             "df": None, "runs": int(len(accuracies))}
    if len(accuracies) < 2:
        return entry
    n, m, s2 = len(accuracies), float(accuracies.mean()), float(accuracies.var(ddof=1))
    for key, seed_part in (("mean_interval", s2 / n), ("prediction_interval", s2 * (1 + 1 / n))):
        total = seed_part + v
        df = _welch_df([(seed_part, n)], total)
        half = _t(confidence, df) * math.sqrt(total)
        entry[key] = [max(0.0, m - half), min(1.0, m + half)]
        if key == "prediction_interval":
            entry["df"] = df
    entry["seed_std"] = math.sqrt(s2)
    return entry


def run_level_test(accuracies_a, accuracies_b, values_a, values_b, confidence=CONFIDENCE):
    """A test of mean(A) − mean(B) whose unit is the run: Welch's t-test on the runs' accuracies, with the
    variance of the paired item difference added (the two groups are scored on the same items):

        se² = s_A²/n_A + s_B²/n_B + v(values_A − values_B),   t = d / se,   df: Satterthwaite's

    A group of one run borrows the other's seed variance (the spread cannot be measured on one run); with one
    run on each side there is no seed spread to measure and the test is None.

    Returns:
        `{"difference", "interval", "p_value", "df", "seed_std": [s_A, s_B], "item_std", "runs": [n_A, n_B],
        "seeds_needed", "borrowed"}` or None.
    """
    from scipy import stats

    a = np.asarray([x for x in accuracies_a if x is not None], dtype="float64")
    b = np.asarray([x for x in accuracies_b if x is not None], dtype="float64")
    if len(a) < 1 or len(b) < 1 or (len(a) < 2 and len(b) < 2):
        return None
    var_a = float(a.var(ddof=1)) if len(a) > 1 else None
    var_b = float(b.var(ddof=1)) if len(b) > 1 else None
    borrowed = var_a is None or var_b is None
    var_a = var_b if var_a is None else var_a
    var_b = var_a if var_b is None else var_b
    v = item_variance(np.asarray(values_a, dtype="float64") - np.asarray(values_b, dtype="float64"))
    d = float(a.mean() - b.mean())
    terms = [(var_a / len(a), len(a) if len(a) > 1 else len(b)), (var_b / len(b), len(b) if len(b) > 1 else len(a))]
    total = terms[0][0] + terms[1][0] + v
    df = _welch_df(terms, total)
    se = math.sqrt(total)
    if se == 0:
        p_value = 1.0 if d == 0 else 0.0
    else:
        p_value = float(2 * (stats.t.sf(abs(d) / se, df) if math.isfinite(df) else stats.norm.sf(abs(d) / se)))
    half = _t(confidence, df) * se
    return {"difference": d, "interval": [d - half, d + half], "p_value": min(1.0, p_value), "df": df,
            "seed_std": [math.sqrt(var_a), math.sqrt(var_b)], "item_std": math.sqrt(v), "runs": [len(a), len(b)],
            "borrowed": borrowed,
            "seeds_needed": seeds_to_resolve(d, var_a, var_b, v, confidence)}


def seeds_to_resolve(difference, var_a, var_b, item_var, confidence=CONFIDENCE, power=POWER, most=1000):
    """How many seeds per group the run-level test needs to tell a true difference of `difference` from none
    with probability `power` (two-sided, at 1 − `confidence`), were the seed variances `var_a`, `var_b` and
    the item variance what was measured: the smallest n whose non-central t power reaches it
    (`scipy.stats.nct`). None where no number of seeds would: the item noise alone (which more seeds do
    not shrink) hides the difference, or more than `most` seeds are needed.
    """
    from scipy import stats

    alpha = 1 - confidence
    if difference == 0:
        return None
    if item_var > 0 and abs(difference) / math.sqrt(item_var) < stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power):
        return None  # even infinitely many seeds leave the item noise, which hides the difference
    for n in range(2, most + 1):
        seed_part = (var_a + var_b) / n
        total = seed_part + item_var
        if total == 0:
            return n
        df = _welch_df([(var_a / n, n), (var_b / n, n)], total)
        delta = abs(difference) / math.sqrt(total)
        if not math.isfinite(df):
            z = stats.norm.ppf(1 - alpha / 2)
            reached = stats.norm.sf(z - delta) + stats.norm.cdf(-z - delta)
        else:
            critical = stats.t.ppf(1 - alpha / 2, df)
            reached = stats.nct.sf(critical, df, delta) + stats.nct.cdf(-critical, df, delta)
        if reached >= power:
            return n
    return None
