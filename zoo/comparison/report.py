"""A comparison of runs: computed (`compare`), then written as Markdown, JSON, a chart (matplotlib) and
TensorBoard summaries (a text summary and the chart).

```python
from zoo.comparison.report import compare, compare_paths, to_markdown
from zoo.comparison.runs import find_runs

runs, skipped = find_runs(["sweeps/small"])
comparison = compare(runs, skipped)           # a typed `zoo.comparison.records.Comparison`
print(to_markdown(comparison))
comparison = compare_paths(["sweeps/small"])  # the same from the paths (`zoo.compare`)
```
"""

import dataclasses
import itertools
import os

import numpy as np

from zoo import fileio
from zoo.comparison import statistics
from zoo.comparison.records import Accuracy, Comparison, Group, GroupRun, McNemar, Pair, RunTest
from zoo.comparison.runs import find_runs, group_runs
from zoo.errors import UserError
from zoo.plotting import pyplot

MARKDOWN_FILE, JSON_FILE, CHART_FILE, LOGS_DIR = "comparison.md", "comparison.json", "comparison.png", "logs"


class PairingError(UserError):
    """Two groups asked to be paired that were not scored on the same test items."""


def compare(runs, skipped=(), pairs=None, resamples=statistics.RESAMPLES, seed=0,
            confidence=statistics.CONFIDENCE):
    """The comparison of finished runs, grouped by everything but the seed.

    Args:
        runs: `zoo.comparison.runs.ComparedRun`s.
        skipped: `[(run_dir, why)]` of runs left out, reported with the comparison.
        pairs: `[(a, b)]` groups (1-based numbers or labels) to test against each other; None: every two
            groups scored on the same test items.
        resamples, seed, confidence: of the bootstrap.

    Returns:
        the `zoo.comparison.records.Comparison` (`groups`, `pairs`, `diagnostics`, `notes`, ...).

    Raises:
        PairingError: a pair asked for whose groups were scored on different items (or without per-item
            predictions); UserError: a pair naming no group.
    """
    grouped = group_runs(runs)
    notes = [f"{run_dir}: not compared, {why}" for run_dir, why in skipped]
    groups = []
    for number, (label, members) in enumerate(grouped, start=1):
        groups.append(_group(number, label, members, resamples, seed, confidence, notes))
    wanted = _pairs_asked(pairs, groups) if pairs is not None else list(itertools.combinations(groups, 2))
    tested = []
    for a, b in wanted:
        pair = _pair(a, b, dict(grouped)[a.label], dict(grouped)[b.label], resamples, seed, confidence)
        if not pair.tested and pairs is not None:
            raise PairingError(f"groups {a.number} ({a.label}) and {b.number} ({b.label}) cannot be "
                               f"paired: {pair.skipped}")
        tested.append(pair)
    return Comparison(confidence=confidence, resamples=resamples, groups=tuple(groups),
                      pairs=tuple(adjust_for_several_pairs(tested)), diagnostics=_diagnostics(grouped),
                      notes=tuple(notes))


def find_compared(paths):
    """The finished runs under `paths` (run directories, folders of runs, glob patterns;
    `zoo.comparison.runs.find_runs`) and `[(run_dir, why)]` of the others.

    Raises:
        UserError: no finished run under `paths`.
    """
    runs, skipped = find_runs(list(paths))
    if not runs:
        raise UserError(f"{' '.join(paths)}: no finished run to compare ({len(skipped)} unfinished)")
    return runs, skipped


def compare_paths(paths, pairs=None, resamples=statistics.RESAMPLES, seed=0, confidence=statistics.CONFIDENCE,
                  found=None):
    """`compare` of the finished runs found under `paths` (`find_compared`, or `found` where the caller has
    them), the others noted; the `Comparison` names the runs compared (`runs`).

    Raises:
        UserError: no finished run under `paths`; as `compare`.
    """
    runs, skipped = found or find_compared(paths)
    comparison = compare(runs, skipped, pairs=pairs, resamples=resamples, seed=seed, confidence=confidence)
    return dataclasses.replace(comparison, runs=tuple(run.run_dir for run in runs))


def _group(number, label, members, resamples, seed, confidence, notes):
    correct = [run.correct() for run in members]
    kept = [c for c in correct if c is not None]
    test = members[0].test
    runs = tuple(GroupRun(run_dir=run.run_dir, seed=run.seed, test_accuracy=run.results.test_accuracy,
                          dev_accuracy=run.results.dev_accuracy, best_epoch=run.results.best_epoch,
                          epochs_run=run.results.epochs_run) for run in members)
    test_accuracy = statistics.spread([run.results.test_accuracy for run in members])
    labels = list(members[0].results.labels or ()) or list((test.get("per_class_accuracy") or {}).keys())
    per_class = {name: statistics.spread([(run.test.get("per_class_accuracy") or {}).get(name) for run in members])
                 for name in labels}
    common = dict(number=number, label=label, model=members[0].model, runs=runs, examples=test.get("examples"),
                  items=test.get("items"), dev_accuracy=Accuracy.of(
                      statistics.spread([run.results.dev_accuracy for run in members])),
                  best_epochs=tuple(run.results.best_epoch for run in members))
    if len(kept) != len(members):
        notes.append(f"group {number} ({label}): {len(members) - len(kept)} of {len(members)} run(s) have no per-item "
                     "predictions in results.json (trained before they were kept): no interval, not paired; train "
                     "them again (nli-zoo train --overwrite) to keep them")
        return Group(**common, test_accuracy=Accuracy.of(test_accuracy),
                     per_class={name: Accuracy.of(c) for name, c in per_class.items()}, per_item=False)
    values = np.mean(kept, axis=0)  # per item: the share of the group's runs that got it right
    test_accuracy.update(interval=_as_list(statistics.bootstrap_interval(values, resamples, seed, confidence)),
                         interval_method=statistics.interval_method(values))
    # seeds and items together: where the mean of many runs and where one more run would fall
    test_accuracy.update(statistics.run_intervals([run.results.test_accuracy for run in members], values, confidence))
    gold = np.frombuffer(test["gold"].encode(), "uint8") - ord("0")
    for index, name in enumerate(labels):
        mask = gold == index
        per_class[name].update(
            interval=_as_list(statistics.bootstrap_interval(values[mask], resamples, seed, confidence))
            if mask.any() else None,
            interval_method=statistics.interval_method(values[mask]) if mask.any() else None)
    return Group(**common, test_accuracy=Accuracy.of(test_accuracy),
                 per_class={name: Accuracy.of(c) for name, c in per_class.items()}, values=values)


def _as_list(interval):
    return list(interval) if interval is not None else None


def _pairs_asked(pairs, groups):
    def find(name):
        for group in groups:
            if str(name) == str(group.number) or name == group.label:
                return group
        known = ", ".join(f"{g.number} ({g.label})" for g in groups)
        raise UserError(f"--pair {name}: no such group; groups: {known}")

    return [(find(a), find(b)) for a, b in pairs]


def _pair(a, b, runs_a, runs_b, resamples, seed, confidence):
    head = dict(a=a.number, b=b.number, a_label=a.label, b_label=b.label)
    if a.values is None or b.values is None:
        return Pair(**head, skipped="a group has runs without per-item predictions")
    if a.items != b.items or len(a.values) != len(b.values):
        return Pair(**head, skipped=f"different test items ({a.examples} and {b.examples} pairs, digests "
                                    f"{a.items} and {b.items})")
    paired = statistics.paired_bootstrap(a.values, b.values, resamples, seed, confidence)
    # the test whose unit is the run (seeds and items): what a verdict on A > B rests on
    runs = statistics.run_level_test([run.results.test_accuracy for run in runs_a],
                                     [run.results.test_accuracy for run in runs_b], a.values, b.values, confidence)
    # McNemar's test compares two classifiers: the runs of the two groups, matched by seed (else in order)
    by_seed_b = {run.seed: run for run in runs_b}
    matched = ([(run, by_seed_b[run.seed]) for run in runs_a if run.seed in by_seed_b]
               if {r.seed for r in runs_a} & set(by_seed_b) else list(zip(runs_a, runs_b)))
    mcnemar = tuple(McNemar(**statistics.mcnemar(x.correct(), y.correct()), seeds=[x.seed, y.seed])
                    for x, y in matched)
    return Pair(**head, **paired, runs=RunTest(**runs) if runs else None, mcnemar=mcnemar)


def adjust_for_several_pairs(pairs):
    """Where more than one pair is tested, Holm's adjustment over the pairs (`statistics.holm`): each tested
    pair gets `p_value_holm`, and each McNemar test `p_value_holm` among the tests of the same seeds (the
    one family per seed: each pair tested once on the runs of those seeds). With one pair nothing changes.

    Returns:
        the pairs, adjusted (a new list; the records are frozen).
    """
    pairs = list(pairs)
    tested = [index for index, pair in enumerate(pairs) if pair.tested]
    if len(tested) < 2:
        return pairs
    for index, adjusted in zip(tested, statistics.holm([pairs[i].p_value for i in tested])):
        pairs[index] = dataclasses.replace(pairs[index], p_value_holm=adjusted)
    by_runs = [index for index in tested if pairs[index].runs]
    if len(by_runs) > 1:
        for index, adjusted in zip(by_runs, statistics.holm([pairs[i].runs.p_value for i in by_runs])):
            pairs[index] = dataclasses.replace(pairs[index], runs=dataclasses.replace(pairs[index].runs,
                                                                                      p_value_holm=adjusted))
    families = {}
    for index in tested:
        for position, test in enumerate(pairs[index].mcnemar):
            families.setdefault(tuple(test.seeds), []).append((index, position))
    adjusted_tests = {}
    for family in families.values():
        p_values = [pairs[i].mcnemar[k].p_value for i, k in family]
        for (index, position), adjusted in zip(family, statistics.holm(p_values)):
            adjusted_tests[(index, position)] = adjusted
    for index in tested:
        mcnemar = tuple(dataclasses.replace(test, p_value_holm=adjusted_tests[(index, position)])
                        for position, test in enumerate(pairs[index].mcnemar))
        pairs[index] = dataclasses.replace(pairs[index], mcnemar=mcnemar)
    return pairs


def _diagnostics(grouped):
    """`{row: {group label: mean accuracy}}` over the runs that have a diagnostics report."""
    table = {}
    for label, members in grouped:
        rows = {}
        for run in members:
            for row, accuracy in _accuracies(run.diagnostics or {}).items():
                rows.setdefault(row, []).append(accuracy)
        for row, values in rows.items():
            table.setdefault(row, {})[label] = float(np.mean(values))
    return table


def _accuracies(node, path=()):
    """Every `accuracy` of a diagnostics report, by its place (`breaking_nli / antonyms`)."""
    found = {}
    if isinstance(node, dict):
        if isinstance(node.get("accuracy"), (int, float)) and not isinstance(node.get("accuracy"), bool):
            found[" / ".join(path) or "all"] = float(node["accuracy"])
        for key, value in node.items():
            if isinstance(value, dict):
                found.update(_accuracies(value, path if key.startswith("per_") else path + (str(key),)))
    return found


# Writing ------------------------------------------------------------------------------------------------
def _acc(value):
    return "-" if value is None else f"{value:.4f}"


WILSON_MARK = "†"


def _interval(interval, method=None):
    mark = WILSON_MARK if method == "wilson" else ""
    return "-" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]{mark}"


def _p(value, floor=None):
    """A p-value as printed: `< FLOOR` where it is the bootstrap's floor (no resample crossed 0)."""
    if floor is not None:
        return f"< {_p(floor)}"
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.1e}"


def _bootstrap_p(pair, comparison):
    floor = statistics.p_value_floor(comparison.resamples) if pair.p_below_floor else None
    text = _p(pair.p_value, floor)
    if pair.p_value_holm is not None:  # adjusted from the floor, it bounds the adjusted p-value from above
        holm = pair.p_value_holm
        text += f" (Holm {'≤ ' if floor is not None and holm < 1 else ''}{_p(holm)})"
    return text


def seeds_needed(runs):
    """The run-level test's seeds per group to resolve the difference (a `RunTest`), as printed."""
    if runs.seeds_needed is None:
        return "none would: the items' noise alone keeps the power under 80%" if runs.difference else "-"
    return f"{runs.seeds_needed}" + (" (one group's spread borrowed)" if runs.borrowed else "")


def _holm(value):
    return f" (Holm {_p(value)})" if value is not None else ""


def to_markdown(comparison):
    """The comparison (a `Comparison`) as Markdown: the groups' table, the paired tests, the diagnostics side by
    side."""
    level = f"{comparison.confidence:.0%}"
    groups = comparison.groups
    class_names = list(groups[0].per_class) if groups else []
    lines = [f"| # | group | runs (seeds) | test accuracy: mean ± std | {level} interval of the mean "
             f"(seeds + items) | {level} interval of one more run (seeds + items) | {level} interval, items only | "
             + " | ".join(class_names) + " | dev accuracy | best dev epoch |",
             "|---|---|---|---|---|---|---|" + "---|" * len(class_names) + "---|---|"]
    for g in groups:
        accuracy = g.test_accuracy
        std = f" ± {accuracy.std:.4f}" if accuracy.std is not None else ""
        seeds = ",".join(str(r.seed) for r in g.runs)
        classes = [f"{_acc(c.mean)} {_interval(c.interval, c.interval_method)}" for c in g.per_class.values()]
        epochs = ",".join("-" if e is None else str(e) for e in g.best_epochs)
        lines.append(f"| {g.number} | {g.label} | {len(g.runs)} ({seeds}) | {_acc(accuracy.mean)}{std} | "
                     f"{_interval(accuracy.mean_interval)} | {_interval(accuracy.prediction_interval)} | "
                     f"{_interval(accuracy.interval, accuracy.interval_method)} | " + " | ".join(classes)
                     + f" | {_acc(g.dev_accuracy.mean)} | {epochs} |")
    examples = sorted({g.examples for g in groups if g.examples})
    counts = ", ".join(f"{n:,}" for n in examples)
    lines += ["", f"Test accuracy over {counts} test pairs. Two sources of noise: the seed and the test items. The "
                  "interval of the mean and that of one more run add the spread between the group's runs (seeds) to "
                  "the test items' variance, with Student's t at Satterthwaite's degrees of freedom: where the mean of "
                  "many runs, and where a single further run (a paper's one run), would fall; '-' with one run, "
                  "whose seed spread cannot be measured. The items-only interval is a percentile bootstrap over the "
                  f"test items ({comparison.resamples:,} resamples) of the seeds' mean: how that mean would move on "
                  "other test pairs, not with other seeds. Per class: accuracy on the pairs of that gold label, with "
                  "its items-only interval."]
    few = [g for g in groups if 2 <= len(g.runs) < 5]
    if few:
        lines.append(f"With {', '.join(sorted({str(len(g.runs)) for g in few}))} seeds a group's seed spread is "
                     "measured on very few runs: Student's t is large and the intervals wide, as they should be.")
    wilson = any(g.test_accuracy.interval_method == "wilson" or any(
        c.interval_method == "wilson" for c in g.per_class.values()) for g in groups)
    if wilson:
        lines.append(f"{WILSON_MARK} Wilson's score interval: every item of it was scored alike (all right or all "
                     "wrong), so the bootstrap has no spread; Wilson's interval still says how uncertain that "
                     "proportion is.")
    if comparison.pairs:
        lines += ["", f"| A | B | difference A - B | {level} interval, runs (seeds + items) | p, runs | "
                      "seeds per group to resolve | "
                      f"{level} interval, items only (paired bootstrap) | p, items only | "
                      "McNemar: only A right / only B right, exact p (per seed) |", "|---" * 9 + "|"]
        for pair in comparison.pairs:
            head = f"| {pair.a} {pair.a_label} | {pair.b} {pair.b_label} |"
            if not pair.tested:
                lines.append(f"{head} not paired: {pair.skipped} | | | | | | |")
                continue
            runs = pair.runs
            if runs:
                run_cells = (f"{_interval(runs.interval)} | {_p(runs.p_value)}{_holm(runs.p_value_holm)}"
                             f" | {seeds_needed(runs)}")
            else:
                run_cells = "- | - | one run a side: no seed spread"
            tests = "; ".join(f"seed {m.seeds[0]}" + (f"/{m.seeds[1]}" if m.seeds[1] != m.seeds[0] else "")
                              + f": {m.a_only}/{m.b_only}, p {_p(m.p_value)}{_holm(m.p_value_holm)}"
                              for m in pair.mcnemar)
            lines.append(f"{head} {pair.difference:+.4f} | {run_cells} | {_interval(pair.interval)} | "
                         f"{_bootstrap_p(pair, comparison)} | {tests} |")
        lines += ["", "The runs' test (Welch's t on the runs' accuracies, the paired items' variance added; its unit "
                      "is the run) is the one a claim rests on; the items-only test holds the seeds fixed. Seeds to "
                      f"resolve: per group, for a {statistics.POWER:.0%} chance that the runs' test separates a "
                      "difference as large as the measured one, were the seed spread what was measured."]
        tested = len(comparison.tested_pairs())
        floor = any(pair.p_below_floor for pair in comparison.pairs)
        if tested > 1:
            lines += ["", f"{tested} pairs are tested: the chance that at least one shows a difference by chance "
                          "alone is higher than each test's. The p-values in brackets are Holm-adjusted over the "
                          f"{tested} pairs (McNemar's: over the pairs, per seed); compare those with your threshold."]
        if floor:
            lines.append(f"`< {_p(statistics.p_value_floor(comparison.resamples))}`: no resampled difference "
                         f"reached 0; the p-value is below what {comparison.resamples:,} resamples can resolve "
                         "(more with --resamples).")
    if comparison.diagnostics:
        labels = [g.label for g in groups]
        lines += ["", "| diagnostics | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for row, values in comparison.diagnostics.items():
            lines.append(f"| {row} | " + " | ".join(_acc(values.get(label)) for label in labels) + " |")
    if comparison.notes:
        lines += [""] + [f"- {note}" for note in comparison.notes]
    return "\n".join(lines)


CHART_INTERVALS = {"mean_interval": "interval of the mean (seeds + items)",
                   "prediction_interval": "interval of one more run (seeds + items)"}


def draw_chart(comparison, interval="mean_interval"):
    """Test accuracy per group: the mean with its interval as error bars, each run as a dot.

    Args:
        interval: which interval (a key of `CHART_INTERVALS`, an attribute of `Accuracy`): the one the verdicts
            use (`nli-zoo compare`'s tests of pairs: the mean's; a reproduction's rows: one more run's). A group
            of one run has neither (no seed spread): its items-only interval is drawn in grey.

    Returns:
        the matplotlib figure.
    """
    plt = pyplot()
    groups = comparison.groups
    figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(groups) + 2), 3.6))
    items_only = False
    for x, group in enumerate(groups):
        accuracy = group.test_accuracy
        mean, bounds, color = accuracy.mean, getattr(accuracy, interval), "C0"
        if bounds is None and accuracy.interval:
            bounds, color, items_only = accuracy.interval, "C7", True
        if bounds:
            axes.errorbar([x], [mean], yerr=[[mean - bounds[0]], [bounds[1] - mean]], fmt="o", color=color,
                          capsize=6, markersize=7, zorder=2)
        else:
            axes.plot([x], [mean], "o", color="C0", markersize=7)
        runs = [r.test_accuracy for r in group.runs if r.test_accuracy is not None]
        axes.plot(np.full(len(runs), x + 0.12), runs, ".", color="C1", zorder=3)
    axes.set_xticks(range(len(groups)))
    axes.set_xticklabels([f"{g.number}: {g.label}" for g in groups], rotation=20, ha="right", fontsize=8)
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.set_ylabel("test accuracy")
    axes.set_title(f"mean test accuracy with its {comparison.confidence:.0%} {CHART_INTERVALS[interval]}\n"
                   "dots: the single runs (seeds)" + ("; grey: one run, items only" if items_only else ""), fontsize=9)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def write(comparison, out_dir, tensorboard=True):
    """Writes `comparison.md`, `comparison.json` (`Comparison.to_json`), `comparison.png` into `out_dir`
    (atomically) and, with `tensorboard`, the Markdown as a text summary and the chart as an image into
    `OUT_DIR/logs`.

    Returns:
        `{"markdown", "json", "chart", "logs"}` paths.
    """
    os.makedirs(out_dir, exist_ok=True)
    markdown = to_markdown(comparison)
    paths = {"markdown": os.path.join(out_dir, MARKDOWN_FILE), "json": os.path.join(out_dir, JSON_FILE),
             "chart": os.path.join(out_dir, CHART_FILE),
             "logs": os.path.join(out_dir, LOGS_DIR) if tensorboard else None}
    with fileio.atomic_write(paths["markdown"], "w", encoding="utf-8") as file:
        file.write(markdown + "\n")
    fileio.write_json(paths["json"], comparison.to_json())
    figure = draw_chart(comparison)
    with fileio.atomic_path(paths["chart"]) as tmp:
        figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    if tensorboard:
        write_tensorboard(markdown, figure, paths["logs"])
    else:
        pyplot().close(figure)
    return paths


def write_tensorboard(markdown, figure, logdir):
    """The comparison in TensorBoard: its Markdown as the text summary `comparison`, the chart as the image
    `comparison/test_accuracy` (closes the figure)."""
    import tensorflow as tf  # only here: the rest of a comparison needs no TensorFlow

    from zoo.training.callbacks.tensorboard import figure_to_image

    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.text("comparison", markdown, step=0)
        tf.summary.image("comparison/test_accuracy", figure_to_image(figure), step=0)
    writer.flush()
    writer.close()
