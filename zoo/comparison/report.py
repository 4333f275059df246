"""A comparison of runs: computed (`compare`), then written as Markdown, JSON, a chart (matplotlib) and
TensorBoard summaries (a text summary and the chart).

```python
from zoo.comparison.report import compare, to_markdown
from zoo.comparison.runs import find_runs

runs, skipped = find_runs(["sweeps/small"])
comparison = compare(runs, skipped)
print(to_markdown(comparison))
```
"""

import itertools
import os

import numpy as np

from zoo import fileio
from zoo.comparison import statistics
from zoo.comparison.runs import group_runs
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
        the comparison as a JSON-ready dict (`groups`, `pairs`, `diagnostics`, `notes`, ...).

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
        entry = _pair(a, b, dict(grouped)[a["label"]], dict(grouped)[b["label"]], resamples, seed, confidence)
        if "skipped" in entry and pairs is not None:
            raise PairingError(f"groups {a['number']} ({a['label']}) and {b['number']} ({b['label']}) cannot be "
                               f"paired: {entry['skipped']}")
        tested.append(entry)
    adjust_for_several_pairs(tested)
    for group in groups:
        group.pop("_values", None)
    return {"confidence": confidence, "resamples": resamples, "groups": groups, "pairs": tested,
            "diagnostics": _diagnostics(grouped), "notes": notes}


def _group(number, label, members, resamples, seed, confidence, notes):
    correct = [run.correct() for run in members]
    kept = [c for c in correct if c is not None]
    test = members[0].test
    entry = {"number": number, "label": label, "model": members[0].model,
             "runs": [{"run_dir": run.run_dir, "seed": run.seed, "test_accuracy": run.results.test_accuracy,
                       "dev_accuracy": run.results.dev_accuracy, "best_epoch": run.results.best_epoch,
                       "epochs_run": run.results.epochs_run} for run in members],
             "examples": test.get("examples"), "items": test.get("items")}
    entry["test_accuracy"] = statistics.spread([run.results.test_accuracy for run in members])
    entry["dev_accuracy"] = statistics.spread([run.results.dev_accuracy for run in members])
    entry["best_epochs"] = [run.results.best_epoch for run in members]
    labels = list(members[0].results.labels or ()) or list((test.get("per_class_accuracy") or {}).keys())
    entry["per_class"] = {name: statistics.spread([(run.test.get("per_class_accuracy") or {}).get(name)
                                                   for run in members]) for name in labels}
    if len(kept) != len(members):
        notes.append(f"group {number} ({label}): {len(members) - len(kept)} of {len(members)} run(s) have no per-item "
                     "predictions in results.json (trained before they were kept): no interval, not paired; train "
                     "them again (nli-zoo train --overwrite) to keep them")
        entry["test_accuracy"]["interval"] = None
        entry["_values"] = None
        return entry
    values = np.mean(kept, axis=0)  # per item: the share of the group's runs that got it right
    entry["test_accuracy"]["interval"] = _as_list(statistics.bootstrap_interval(values, resamples, seed, confidence))
    entry["test_accuracy"]["interval_method"] = statistics.interval_method(values)
    gold = np.frombuffer(test["gold"].encode(), "uint8") - ord("0")
    for index, name in enumerate(labels):
        mask = gold == index
        entry["per_class"][name]["interval"] = _as_list(
            statistics.bootstrap_interval(values[mask], resamples, seed, confidence)) if mask.any() else None
        entry["per_class"][name]["interval_method"] = statistics.interval_method(values[mask]) if mask.any() else None
    entry["_values"] = values
    return entry


def _as_list(interval):
    return list(interval) if interval is not None else None


def _pairs_asked(pairs, groups):
    def find(name):
        for group in groups:
            if str(name) == str(group["number"]) or name == group["label"]:
                return group
        known = ", ".join(f"{g['number']} ({g['label']})" for g in groups)
        raise UserError(f"--pair {name}: no such group; groups: {known}")

    return [(find(a), find(b)) for a, b in pairs]


def _pair(a, b, runs_a, runs_b, resamples, seed, confidence):
    entry = {"a": a["number"], "b": b["number"], "a_label": a["label"], "b_label": b["label"]}
    if a["_values"] is None or b["_values"] is None:
        entry["skipped"] = "a group has runs without per-item predictions"
    elif a["items"] != b["items"] or len(a["_values"]) != len(b["_values"]):
        entry["skipped"] = (f"different test items ({a['examples']} and {b['examples']} pairs, digests "
                            f"{a['items']} and {b['items']})")
    if "skipped" in entry:
        return entry
    entry.update(statistics.paired_bootstrap(a["_values"], b["_values"], resamples, seed, confidence))
    # McNemar's test compares two classifiers: the runs of the two groups, matched by seed (else in order)
    by_seed_b = {run.seed: run for run in runs_b}
    matched = ([(run, by_seed_b[run.seed]) for run in runs_a if run.seed in by_seed_b]
               if {r.seed for r in runs_a} & set(by_seed_b) else list(zip(runs_a, runs_b)))
    entry["mcnemar"] = [dict(statistics.mcnemar(x.correct(), y.correct()), seeds=[x.seed, y.seed])
                        for x, y in matched]
    return entry


def adjust_for_several_pairs(pairs):
    """Where more than one pair is tested, Holm's adjustment over the pairs (`statistics.holm`): each tested
    pair gets `p_value_holm`, and each McNemar test `p_value_holm` among the tests of the same seeds (the
    one family per seed: each pair tested once on the runs of those seeds). With one pair nothing changes."""
    tested = [pair for pair in pairs if "p_value" in pair]
    if len(tested) < 2:
        return
    for pair, adjusted in zip(tested, statistics.holm([pair["p_value"] for pair in tested])):
        pair["p_value_holm"] = adjusted
    families = {}
    for pair in tested:
        for test in pair["mcnemar"]:
            families.setdefault(tuple(test["seeds"]), []).append(test)
    for family in families.values():
        for test, adjusted in zip(family, statistics.holm([test["p_value"] for test in family])):
            test["p_value_holm"] = adjusted


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
    floor = statistics.p_value_floor(comparison["resamples"]) if pair.get("p_below_floor") else None
    text = _p(pair["p_value"], floor)
    if "p_value_holm" in pair:  # adjusted from the floor, it bounds the adjusted p-value from above
        holm = pair["p_value_holm"]
        text += f" (Holm {'≤ ' if floor is not None and holm < 1 else ''}{_p(holm)})"
    return text


def to_markdown(comparison):
    """The comparison as Markdown: the groups' table, the paired tests, the diagnostics side by side."""
    level = f"{comparison['confidence']:.0%}"
    groups = comparison["groups"]
    class_names = list(groups[0]["per_class"]) if groups else []
    lines = [f"| # | group | runs (seeds) | test accuracy: mean ± std | {level} interval | "
             + " | ".join(class_names) + " | dev accuracy | best dev epoch |",
             "|---|---|---|---|---|" + "---|" * len(class_names) + "---|---|"]
    for g in groups:
        accuracy = g["test_accuracy"]
        std = f" ± {accuracy['std']:.4f}" if accuracy["std"] is not None else ""
        seeds = ",".join(str(r["seed"]) for r in g["runs"])
        classes = [f"{_acc(c['mean'])} {_interval(c.get('interval'), c.get('interval_method'))}"
                   for c in g["per_class"].values()]
        epochs = ",".join("-" if e is None else str(e) for e in g["best_epochs"])
        lines.append(f"| {g['number']} | {g['label']} | {len(g['runs'])} ({seeds}) | {_acc(accuracy['mean'])}{std} | "
                     f"{_interval(accuracy.get('interval'), accuracy.get('interval_method'))} | " + " | ".join(classes)
                     + f" | {_acc(g['dev_accuracy']['mean'])} | {epochs} |")
    examples = sorted({g["examples"] for g in groups if g["examples"]})
    counts = ", ".join(f"{n:,}" for n in examples)
    lines += ["", f"Test accuracy over {counts} test pairs; the interval is a percentile bootstrap over the test "
                  f"items ({comparison['resamples']:,} resamples) of the group's mean accuracy; per class: accuracy "
                  "on the pairs of that gold label, with its interval."]
    wilson = any(g["test_accuracy"].get("interval_method") == "wilson" or any(
        c.get("interval_method") == "wilson" for c in g["per_class"].values()) for g in groups)
    if wilson:
        lines.append(f"{WILSON_MARK} Wilson's score interval: every item of it was scored alike (all right or all "
                     "wrong), so the bootstrap has no spread; Wilson's interval still says how uncertain that "
                     "proportion is.")
    if comparison["pairs"]:
        lines += ["", f"| A | B | difference A - B | {level} interval (paired bootstrap) | p (bootstrap) | "
                      "McNemar: only A right / only B right, exact p (per seed) |", "|---|---|---|---|---|---|"]
        for pair in comparison["pairs"]:
            head = f"| {pair['a']} {pair['a_label']} | {pair['b']} {pair['b_label']} |"
            if "skipped" in pair:
                lines.append(f"{head} not paired: {pair['skipped']} | | | |")
                continue
            tests = "; ".join(f"seed {m['seeds'][0]}" + (f"/{m['seeds'][1]}" if m['seeds'][1] != m['seeds'][0] else "")
                              + f": {m['a_only']}/{m['b_only']}, p {_p(m['p_value'])}"
                              + (f" (Holm {_p(m['p_value_holm'])})" if "p_value_holm" in m else "")
                              for m in pair["mcnemar"])
            lines.append(f"{head} {pair['difference']:+.4f} | {_interval(pair['interval'])} | "
                         f"{_bootstrap_p(pair, comparison)} | {tests} |")
        tested = sum("p_value" in pair for pair in comparison["pairs"])
        floor = any(pair.get("p_below_floor") for pair in comparison["pairs"])
        if tested > 1:
            lines += ["", f"{tested} pairs are tested: the chance that at least one shows a difference by chance "
                          "alone is higher than each test's. The p-values in brackets are Holm-adjusted over the "
                          f"{tested} pairs (McNemar's: over the pairs, per seed); compare those with your threshold."]
        if floor:
            lines.append(f"`< {_p(statistics.p_value_floor(comparison['resamples']))}`: no resampled difference "
                         f"reached 0; the p-value is below what {comparison['resamples']:,} resamples can resolve "
                         "(more with --resamples).")
    if comparison["diagnostics"]:
        labels = [g["label"] for g in groups]
        lines += ["", "| diagnostics | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for row, values in comparison["diagnostics"].items():
            lines.append(f"| {row} | " + " | ".join(_acc(values.get(label)) for label in labels) + " |")
    if comparison["notes"]:
        lines += [""] + [f"- {note}" for note in comparison["notes"]]
    return "\n".join(lines)


def draw_chart(comparison):
    """Test accuracy per group: the mean with its interval as error bars, each run as a dot.

    Returns:
        the matplotlib figure.
    """
    plt = pyplot()
    groups = comparison["groups"]
    figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(groups) + 2), 3.6))
    for x, group in enumerate(groups):
        mean, interval = group["test_accuracy"]["mean"], group["test_accuracy"].get("interval")
        if interval:
            axes.errorbar([x], [mean], yerr=[[mean - interval[0]], [interval[1] - mean]], fmt="o", color="C0",
                          capsize=6, markersize=7, zorder=2)
        else:
            axes.plot([x], [mean], "o", color="C0", markersize=7)
        runs = [r["test_accuracy"] for r in group["runs"] if r["test_accuracy"] is not None]
        axes.plot(np.full(len(runs), x + 0.12), runs, ".", color="C1", zorder=3)
    axes.set_xticks(range(len(groups)))
    axes.set_xticklabels([f"{g['number']}: {g['label']}" for g in groups], rotation=20, ha="right", fontsize=8)
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.set_ylabel("test accuracy")
    axes.set_title(f"mean test accuracy with its {comparison['confidence']:.0%} bootstrap interval\n"
                   "dots: the single runs (seeds)", fontsize=9)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def write(comparison, out_dir, tensorboard=True):
    """Writes `comparison.md`, `comparison.json`, `comparison.png` into `out_dir` (atomically) and, with
    `tensorboard`, the Markdown as a text summary and the chart as an image into `OUT_DIR/logs`.

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
    fileio.write_json(paths["json"], comparison)
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
