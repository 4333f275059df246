"""`nli-zoo compare`: the statistics against scipy and exact counts on fixed predictions, runs grouped by
everything but the seed, paired tests only on the same test items, the diagnostics side by side, what is
written (Markdown, JSON, chart, TensorBoard), and the user errors (one line, status 2).

The runs are written the way training writes them (`config.json`, and `results.json` whose test scores come
from `zoo.runs.evaluation`), with fixed predictions, so that every number can be checked.
"""

import json
import math

import numpy as np
import pytest
from scipy import stats

from tests.support.runs import write_record, write_results
from zoo.commands import compare as compare_command
from zoo.comparison import statistics
from zoo.comparison.records import Comparison
from zoo.comparison.report import PairingError, compare, to_markdown
from zoo.comparison.runs import find_runs
from zoo.data import LABELS
from zoo.runs.evaluation import keep_items, scores

N = 120
GOLD = np.arange(N) % 3


def examples(prefix="a"):
    return [{"premise": f"{prefix} premise {i}", "hypothesis": f"hypothesis {i}", "label": int(GOLD[i])}
            for i in range(N)]


def predictions_with(correct):
    """Predicted labels right exactly where `correct` is."""
    return np.where(correct, GOLD, (GOLD + 1) % 3)


def write_run(folder, model, seed, correct, hidden_size=16, items="a", diagnostics=None):
    test = keep_items(scores(GOLD, predictions_with(correct)), examples(items))
    write_record(folder, model, seed, overrides={"hidden_size": hidden_size}, epochs=2,
                 dataset="snli_sample" if items == "a" else "multi_nli")
    results = {"model": model, "test": test, "test_accuracy": test["accuracy"], "dev_accuracy": 0.4 + seed / 100,
               "best_epoch": 1 + seed % 2, "epochs_run": 2, "labels": list(LABELS)}
    write_results(folder, results)
    if diagnostics is not None:
        (folder / "evaluations").mkdir()
        (folder / "evaluations" / "diagnostics.json").write_text(json.dumps(diagnostics))


def correctness(seed, rate):
    return np.random.default_rng(seed).random(N) < rate


@pytest.fixture
def sweep(tmp_path):
    """Two models x three seeds on the same items; the better one is right on 80% of them, the other on 55%."""
    root = tmp_path / "S" / "runs"
    breaking = {"breaking_nli": {"accuracy": 0.5, "examples": 10,
                                 "per_category": {"antonyms": {"accuracy": 0.25, "examples": 4}}}}
    for seed in range(3):
        write_run(root / f"esim-seed={seed}", "esim", seed, correctness(seed, 0.8), diagnostics=breaking)
        write_run(root / f"bowman_lstm-seed={seed}", "bowman_lstm", seed, correctness(10 + seed, 0.55))
    return tmp_path / "S"


def test_the_statistics_agree_with_scipy_and_exact_counts():
    a = np.zeros(200, bool)
    a[:170] = True                       # run A right on 170 items
    b = np.zeros(200, bool)
    b[:140] = True
    b[170:180] = True                    # run B right on 150: 30 only A, 10 only B
    test = statistics.mcnemar(a, b)
    assert (test["a_only"], test["b_only"]) == (30, 10)
    exact = min(1.0, 2 * sum(math.comb(40, k) for k in range(11)) / 2 ** 40)  # two-sided exact binomial
    assert test["p_value"] == pytest.approx(exact, rel=1e-9)
    assert test["p_value"] == pytest.approx(stats.binomtest(30, 40, 0.5).pvalue, rel=1e-12)
    assert statistics.mcnemar(a, a)["p_value"] == 1.0

    low, high = statistics.bootstrap_interval(a.astype(float), resamples=2000, seed=3)
    expected = stats.bootstrap((a.astype(float),), np.mean, n_resamples=2000, method="percentile",
                               rng=np.random.default_rng(3)).confidence_interval
    assert (low, high) == pytest.approx((expected.low, expected.high))
    half_width = 1.96 * math.sqrt(0.85 * 0.15 / 200)  # the normal approximation of the same interval
    assert low == pytest.approx(0.85 - half_width, abs=0.012) and high == pytest.approx(0.85 + half_width, abs=0.012)

    paired = statistics.paired_bootstrap(a.astype(float), b.astype(float), resamples=2000, seed=3)
    reference = stats.bootstrap((a.astype(float), b.astype(float)), lambda x, y, axis: x.mean(axis) - y.mean(axis),
                                paired=True, n_resamples=2000, method="percentile", rng=np.random.default_rng(3))
    assert paired["difference"] == pytest.approx(0.1)
    assert paired["interval"] == pytest.approx([reference.confidence_interval.low, reference.confidence_interval.high])
    below = np.sum(reference.bootstrap_distribution <= 0)
    assert paired["p_value"] == pytest.approx(2 * (below + 1) / 2001) and paired["p_value"] < 0.05
    same = statistics.paired_bootstrap(a.astype(float), np.roll(a, 1).astype(float), resamples=2000)
    assert same["interval"][0] < 0 < same["interval"][1] and same["p_value"] > 0.5
    assert statistics.spread([0.5, 0.7]) == {"mean": pytest.approx(0.6), "std": pytest.approx(math.sqrt(0.02)), "n": 2}


def test_intervals_and_the_run_level_test_carry_the_seed_spread_and_the_items():
    # two runs 6.4 points apart (the seeds' spread) on 9,824 items: the items-only interval of their mean is
    # about a point wide and holds neither run; one more run's interval holds both, the mean's lies inside it
    rng = np.random.default_rng(0)
    runs = np.array([rng.random(9824) < 0.403, rng.random(9824) < 0.339])
    accuracies = runs.mean(axis=1)
    share = runs.mean(axis=0)
    low, high = statistics.bootstrap_interval(share, 500)
    assert not any(low <= a <= high for a in accuracies)
    both = statistics.run_intervals(accuracies, share)
    m, s2, v = accuracies.mean(), accuracies.var(ddof=1), share.var(ddof=1) / len(share)
    df = (s2 * 1.5 + v) ** 2 / (s2 * 1.5) ** 2  # Satterthwaite, n - 1 = 1 (two runs)
    half = stats.t.ppf(0.975, df) * math.sqrt(s2 * 1.5 + v)
    assert both["prediction_interval"] == pytest.approx([max(0, m - half), min(1, m + half)])
    assert all(both["prediction_interval"][0] <= a <= both["prediction_interval"][1] for a in accuracies)
    assert both["prediction_interval"][0] <= both["mean_interval"][0] < m < both["mean_interval"][1]
    assert both["mean_interval"][1] <= both["prediction_interval"][1] and both["seed_std"] == pytest.approx(s2 ** 0.5)
    assert statistics.run_intervals(accuracies[:1], runs[0])["prediction_interval"] is None  # one seed: unknown

    # A ahead of B on the items by one lucky seed: the items-only test finds it, the runs' test does not,
    # and says how many seeds would resolve a difference that large
    b_runs = np.array([rng.random(9824) < 0.345, rng.random(9824) < 0.345])
    items = statistics.paired_bootstrap(share, b_runs.mean(axis=0), 500)
    by_runs = statistics.run_level_test(accuracies, b_runs.mean(axis=1), share, b_runs.mean(axis=0))
    assert items["p_value"] < 0.05 and by_runs["p_value"] > 0.05
    assert by_runs["interval"][0] < 0 < by_runs["interval"][1] and by_runs["runs"] == [2, 2]
    d, se2 = accuracies.mean() - b_runs.mean(axis=1).mean(), (
        s2 / 2 + b_runs.mean(axis=1).var(ddof=1) / 2 + (share - b_runs.mean(axis=0)).var(ddof=1) / 9824)
    assert by_runs["difference"] == pytest.approx(d) and by_runs["p_value"] == pytest.approx(
        2 * stats.t.sf(abs(d) / math.sqrt(se2), by_runs["df"]))
    needed = by_runs["seeds_needed"]
    assert needed and needed > 2
    # with that many seeds, the same spread and difference, the test separates them most of the time
    separated = 0
    for trial in range(200):
        draw = np.random.default_rng(trial)
        a = d + draw.normal(0, math.sqrt(s2), needed)
        b = draw.normal(0, math.sqrt(b_runs.mean(axis=1).var(ddof=1)), needed)
        separated += stats.ttest_ind(a, b, equal_var=False).pvalue < 0.05
    assert separated / 200 > 0.6
    # a difference smaller than the item noise: no number of seeds resolves it
    assert statistics.seeds_to_resolve(0.001, 1e-4, 1e-4, 2.5e-5) is None
    assert statistics.run_level_test(accuracies[:1], accuracies[1:], share, share) is None  # one run a side


def test_seeds_are_grouped_and_the_two_groups_paired_on_their_items(sweep):
    runs, skipped = find_runs([str(sweep)])
    comparison = compare(runs, skipped, resamples=1000)
    esim, bowman = comparison.group("esim"), comparison.group("bowman_lstm")
    accuracies = [float(np.mean(correctness(s, 0.8))) for s in range(3)]
    assert esim.test_accuracy.mean == pytest.approx(np.mean(accuracies))
    assert esim.test_accuracy.std == pytest.approx(np.std(accuracies, ddof=1))
    share = np.mean([correctness(s, 0.8) for s in range(3)], axis=0)
    assert esim.test_accuracy.interval == pytest.approx(list(statistics.bootstrap_interval(share, 1000)))
    assert esim.test_accuracy.interval[0] < esim.test_accuracy.mean < esim.test_accuracy.interval[1]
    entailment = esim.per_class["entailment"]
    assert entailment.interval == pytest.approx(list(statistics.bootstrap_interval(share[GOLD == 0], 1000)))
    assert esim.best_epochs == (1, 2, 1) and [r.seed for r in esim.runs] == [0, 1, 2]
    [pair] = comparison.pairs
    assert {pair.a_label, pair.b_label} == {"esim", "bowman_lstm"} and comparison.pair_of("esim", "bowman_lstm") is pair
    sign = 1 if pair.a_label == "esim" else -1
    assert sign * pair.difference == pytest.approx(esim.test_accuracy.mean - bowman.test_accuracy.mean)
    low, high = sorted(sign * bound for bound in pair.interval)
    assert pair.p_value < 0.05 and 0 < low < sign * pair.difference < high
    intervals = statistics.run_intervals([r.test_accuracy for r in esim.runs], share)
    assert esim.test_accuracy.prediction_interval == pytest.approx(intervals["prediction_interval"])
    low, high = sorted(sign * bound for bound in pair.runs.interval)  # the runs' test: wider, still > 0
    assert pair.runs.p_value < 0.05 and 0 < low and high - low > abs(pair.interval[1] - pair.interval[0])
    for test in pair.mcnemar:  # one McNemar test per seed, the runs of equal seed paired
        seed = test.seeds[0]
        expected = statistics.mcnemar(*((correctness(seed, 0.8), correctness(10 + seed, 0.55))[::sign]))
        assert test.seeds == [seed, seed] and test.p_value == pytest.approx(expected["p_value"])
    assert comparison.diagnostics == {"breaking_nli": {"esim": 0.5}, "breaking_nli / antonyms": {"esim": 0.25}}


def test_the_command_prints_the_table_and_writes_markdown_json_chart_and_tensorboard(sweep, capsys):
    write_record(sweep / "runs" / "esim-seed=9", "esim", 9)  # unfinished: reported, not compared
    comparison = compare_command.main([str(sweep), "--resamples", "500"])
    out = capsys.readouterr().out
    assert ("| # | group | runs (seeds) | test accuracy: mean ± std | 95% interval of the mean (seeds + items) | "
            "95% interval of one more run (seeds + items) | 95% interval, items only |") in out
    assert "p, runs" in out and "seeds per group to resolve" in out
    assert "esim-seed=9: not compared, unfinished" in out
    assert "McNemar" in out and "seed 0:" in out
    folder = sweep / "comparison"
    written = json.loads((folder / "comparison.json").read_text())
    assert written == json.loads(json.dumps(comparison.to_json()))
    assert written["runs"] == [str(sweep / "runs" / f"{m}-seed={s}") for m in ("bowman_lstm", "esim") for s in range(3)]
    assert Comparison.from_json(written).to_json() == written  # the record reads back what it wrote
    assert (folder / "comparison.md").read_text().strip() == out.split("\n[compare]")[0].strip()
    assert (folder / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    import tensorflow as tf

    tags = {value.tag for path in (folder / "logs").iterdir()
            for event in tf.compat.v1.train.summary_iterator(str(path)) for value in event.summary.value}
    assert tags == {"comparison", "comparison/test_accuracy"}


def test_quiet_prints_the_table_and_no_note(sweep, tmp_path, capsys):
    comparison = compare_command.main([str(sweep), "--resamples", "200", "--no-tensorboard", "--quiet",
                                       "--out", str(tmp_path / "q")])
    assert capsys.readouterr().out == to_markdown(comparison) + "\n"  # no "[compare] written: ..."
    assert (tmp_path / "q" / "comparison.md").read_text() == to_markdown(comparison) + "\n"


def test_settings_that_differ_name_the_groups_and_other_test_items_are_not_paired(tmp_path, capsys):
    write_run(tmp_path / "r" / "a16", "esim", 0, correctness(1, 0.7), hidden_size=16)
    write_run(tmp_path / "r" / "a32", "esim", 0, correctness(2, 0.7), hidden_size=32)
    write_run(tmp_path / "r" / "other", "esim", 0, correctness(3, 0.7), items="b")
    comparison = compare_command.main([str(tmp_path / "r" / "a*"), str(tmp_path / "r" / "other"),
                                       "--no-tensorboard", "--resamples", "200", "--out", str(tmp_path / "out")])
    labels = [g.label for g in comparison.groups]
    assert labels == ["esim data.source=multi_nli hidden_size=16", "esim data.source=snli_sample hidden_size=16",
                      "esim data.source=snli_sample hidden_size=32"]
    skipped = [p for p in comparison.pairs if not p.tested]
    assert len(skipped) == 2 and all("different test items" in p.skipped for p in skipped)
    assert all(set(p.to_json()) == {"a", "b", "a_label", "b_label", "skipped"} for p in skipped)
    with pytest.raises(SystemExit) as stopped:  # asked for explicitly: an error
        compare_command.main([str(tmp_path / "r"), "--pair", "1", "2", "--no-tensorboard",
                              "--out", str(tmp_path / "o")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "cannot be paired: different test items" in err and len(err.splitlines()) == 1
    with pytest.raises(PairingError):
        compare(find_runs([str(tmp_path / "r")])[0], pairs=[("1", "3")], resamples=200)


@pytest.mark.parametrize("argument, message", [
    ("{tmp}/nothing-*", "no file or directory matches"),
    ("{tmp}/missing", "no such run directory"),
    ("{tmp}", "not a run directory and holds none"),
])
def test_errors_are_one_line_and_status_2(tmp_path, capsys, argument, message):
    with pytest.raises(SystemExit) as stopped:
        compare_command.main([argument.format(tmp=tmp_path), "--no-tensorboard"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_runs_scored_before_predictions_were_kept_get_no_interval_and_a_note(tmp_path):
    write_run(tmp_path / "old", "esim", 0, correctness(1, 0.7))
    results = json.loads((tmp_path / "old" / "results.json").read_text())
    for key in ("predictions", "gold", "items"):
        del results["test"][key]
    write_results(tmp_path / "old", results)
    comparison = compare(*find_runs([str(tmp_path / "old")]), resamples=200)
    [group] = comparison.groups
    assert group.test_accuracy.interval is None and not group.per_item
    assert group.test_accuracy.mean == pytest.approx(results["test_accuracy"])
    assert "no per-item predictions" in comparison.notes[0]
    written = group.to_json()  # the layout it always had: the items' interval null, no other interval
    assert set(written["test_accuracy"]) == {"mean", "std", "n", "interval"}
    assert all(set(c) == {"mean", "std", "n"} for c in written["per_class"].values())


def test_at_the_edges_no_zero_width_interval_holm_over_pairs_and_p_below_the_floor(tmp_path, capsys):
    # one model predicts "entailment" for every pair (right on exactly the entailment third), one is right on
    # 95% of the pairs, one on 50%: three pairs tested, one difference no resample brings to 0
    root = tmp_path / "edges"
    write_run(root / "hypothesis_only", "hypothesis_only", 0, GOLD == 0)
    write_run(root / "esim", "esim", 0, correctness(1, 0.95))
    write_run(root / "bowman_lstm", "bowman_lstm", 0, correctness(2, 0.5))
    comparison = compare_command.main([str(root), "--resamples", "200", "--no-tensorboard"])
    one_class = comparison.group("hypothesis_only").per_class
    for name, proportion in (("entailment", 1.0), ("neutral", 0.0)):
        low, high = one_class[name].interval
        assert one_class[name].interval_method == "wilson" and high - low > 0.05
        k = int(proportion * 40)  # 40 pairs of each class, all right or all wrong
        expected = stats.binomtest(k, 40).proportion_ci(confidence_level=0.95, method="wilson")
        assert (low, high) == pytest.approx((expected.low, expected.high))
    p_values = [pair.p_value for pair in comparison.pairs]
    order = np.argsort(p_values)
    expected_holm = np.maximum.accumulate([min(1.0, (3 - rank) * p_values[i]) for rank, i in enumerate(order)])
    assert [comparison.pairs[i].p_value_holm for i in order] == pytest.approx(list(expected_holm))
    floor = [pair for pair in comparison.pairs if pair.p_below_floor]
    assert floor and floor[0].p_value == pytest.approx(statistics.p_value_floor(200))
    assert all(test.p_value_holm is not None for pair in comparison.pairs for test in pair.mcnemar)
    out = capsys.readouterr().out
    assert "†" in out and "Wilson's score interval" in out and "[1.0000, 1.0000]" not in out
    assert "< 0.00995" in out and "Holm-adjusted over the 3 pairs" in out
    assert all(f"(Holm {'≤ ' if p.p_below_floor else ''}" in out for p in comparison.pairs)
