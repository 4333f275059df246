"""The reproduction's report: the paper's table with the measured columns beside it, the paper's claimed
orderings as paired tests, computed with `zoo.comparison` (`report.compare`: groups of seeds, bootstrap
intervals, the paired bootstrap, McNemar's test) and written as Markdown, JSON, a chart and TensorBoard.

`build(...)` returns the report as a JSON-ready dict; `zoo.reproduction.markdown` formats it; `write`
puts the files of one report in place together (a kill leaves the previous report or the new one).
"""

import os

import numpy as np

from zoo import fileio
from zoo.comparison import statistics
from zoo.comparison.report import PairingError, compare, draw_chart, write_tensorboard
from zoo.comparison.runs import find_runs, group_runs
from zoo.reproduction import markdown
from zoo.reproduction.plan import departures

MARKDOWN_FILE, JSON_FILE, CHART_FILE, LOGS_DIR = "reproduction.md", "reproduction.json", "reproduction.png", "logs"


def build(paper, spec, directory, rows, failures=None, resamples=statistics.RESAMPLES, seed=0):
    """The report of a reproduction.

    Args:
        paper: the `Paper`. spec: the `ReproductionSpec`. directory: the reproduction directory.
        rows: the runnable rows that were asked for.
        failures: `{run_dir: error}` of runs that failed (from the sweep's summary).
        resamples, seed: of the bootstrap.

    Returns:
        `{"paper", "citation", "conditions", "rows", "claims", "comparison", "notes", ...}`.
    """
    failures = failures or {}
    selected = {row.id for row in rows}
    run_dirs = {row.id: [(s, os.path.normpath(d)) for s, d in spec.row_runs(row, directory)] for row in rows}
    existing = [d for pairs in run_dirs.values() for _, d in pairs if os.path.exists(os.path.join(d, "config.json"))]
    records, skipped = find_runs(list(dict.fromkeys(existing))) if existing else ([], [])
    label_of = {os.path.normpath(run.run_dir): label for label, members in group_runs(records) for run in members}
    row_label = {row_id: next((label_of[d] for _, d in pairs if d in label_of), None)
                 for row_id, pairs in run_dirs.items()}
    claims = [c for c in paper.claims if row_label.get(c.a) and row_label.get(c.b)]
    asked = list(dict.fromkeys((row_label[c.a], row_label[c.b]) for c in claims))
    try:
        comparison = compare(records, skipped, pairs=asked, resamples=resamples, seed=seed)
    except PairingError:  # a pair scored on other items: every pair, each marked tested or not
        comparison = compare(records, skipped, pairs=None, resamples=resamples, seed=seed)
    groups = {g["label"]: g for g in comparison["groups"]}
    results = {os.path.normpath(run.run_dir): run.results for run in records}
    report = {"paper": paper.key, "citation": paper.citation, "data": paper.data, "vectors": paper.vectors,
              "tables": paper.tables, "seeds": list(spec.seeds), "directory": directory,
              "confidence": comparison["confidence"], "resamples": comparison["resamples"]}
    entries, all_departures = [], []
    for row in paper.rows:
        entry = _row(paper, row, spec, selected, run_dirs.get(row.id, []), groups.get(row_label.get(row.id)),
                     results, failures)
        entries.append(entry)
        for item in entry.get("departures", []):
            if item not in all_departures:
                all_departures.append(item)
    report["rows"] = entries
    report["conditions"] = {"departures": all_departures, "levels_comparable": not all_departures,
                            "train": spec.train, "settings": {k: v[0] for k, v in spec.settings.items()}}
    report["claims"] = [_claim(paper, claim, entries, row_label, comparison) for claim in paper.claims]
    report["comparison"] = comparison
    report["notes"] = list(paper.notes)
    return report


def _row(paper, row, spec, selected, runs, group, results, failures):
    entry = {"id": row.id, "printed": row.printed, "name": row.name, "reported": row.reported, "model": row.model,
             "settings": row.settings, "members": [u.name for u in row.units()] if row.members else [],
             "cited": row.cited, "note": row.note}
    if not row.runnable:
        entry.update(status="not runnable", verdict=f"not runnable: {row.not_runnable}")
        return entry
    if row.id not in selected:
        entry.update(status="not selected", verdict="not run (not in --rows)")
        return entry
    failed = [f"seed {s}: {failures[d]}" for s, d in runs if d in failures]
    if group is None:
        entry.update(status="not run", runs=[d for _, d in runs],
                     verdict="failed: " + "; ".join(failed) if failed else "not run yet: rerun the command")
        return entry
    members = group["runs"]
    finished = [results[os.path.normpath(run["run_dir"])] for run in members]
    found = departures(paper, row, spec)
    if group["examples"] != paper.data["test_pairs"]:
        found.append(("test pairs", f"{group['examples']:,}", f"{paper.data['test_pairs']:,}"))
    accuracy = group["test_accuracy"]
    entry.update(status="run", group=group["label"], runs=[r["run_dir"] for r in members],
                 seeds=[r["seed"] for r in members], failed=failed, test_pairs=group["examples"],
                 departures=[list(item) for item in found])
    measured = {"test": _percent(accuracy["mean"]), "test_std": _percent(accuracy["std"]),
                "test_interval": [_percent(v) for v in accuracy["interval"]] if accuracy.get("interval") else None,
                "dev": _percent(group["dev_accuracy"]["mean"]), "train": _percent(_train_accuracy(finished)),
                "params": (finished[0].parameters or {}).get("without_embeddings")}
    entry["measured"] = measured
    reported = row.reported.get("test")
    entry["difference"] = None if reported is None or measured["test"] is None else measured["test"] - reported
    interval = measured["test_interval"]
    inside = None if interval is None or reported is None else interval[0] <= reported <= interval[1]
    if found:
        entry["reported_inside"] = None
        entry["verdict"] = "ordering only (not the paper's conditions)"
    else:
        entry["reported_inside"] = inside
        entry["verdict"] = ("no interval" if inside is None else "as reported" if inside else
                            "below the paper" if entry["difference"] < 0 else "above the paper")
    if failed:
        entry["verdict"] += f"; failed: {'; '.join(failed)}"
    return entry


def _train_accuracy(finished):
    """The mean over the runs (their results) of the training accuracy of each run's best epoch (Keras's
    running mean over the epoch, dropout on), or None (an ensemble has no training epochs)."""
    values = []
    for results in finished:
        chosen = [e for e in results.history if e.get("epoch") == results.best_epoch]
        if chosen and chosen[0].get("accuracy") is not None:
            values.append(chosen[0]["accuracy"])
    return float(np.mean(values)) if values else None


def _percent(value):
    return None if value is None else 100.0 * value


def _claim(paper, claim, entries, row_label, comparison):
    by_id = {entry["id"]: entry for entry in entries}
    entry = {"kind": claim.kind, "a": claim.a, "b": claim.b, "claim": claim.describe(paper), "quote": claim.quote,
             "where": claim.where}
    reported = [paper.row(claim.a).reported.get("test"), paper.row(claim.b).reported.get("test")]
    entry["reported_difference"] = None if None in reported else reported[0] - reported[1]
    missing = [by_id[i] for i in (claim.a, claim.b) if by_id[i]["status"] != "run"]
    if missing:
        entry["verdict"] = "not tested: " + "; ".join(f"row {m['id']} {m['verdict']}" for m in missing)
        return entry
    a, b = row_label[claim.a], row_label[claim.b]
    pair = next((p for p in comparison["pairs"] if (p["a_label"], p["b_label"]) in ((a, b), (b, a))), None)
    if pair is None or "skipped" in pair:
        entry["verdict"] = "not tested: " + (pair["skipped"] if pair else "the rows were not paired")
        return entry
    sign = 1 if pair["a_label"] == a else -1
    low, high = sorted(sign * 100.0 * v for v in pair["interval"])
    entry.update(difference=sign * 100.0 * pair["difference"], interval=[low, high], p_value=pair["p_value"],
                 mcnemar=pair["mcnemar"])
    if claim.kind == "better":
        entry["verdict"] = "held" if low > 0 else "not held" if high < 0 else "not resolved"
    else:  # no difference claimed: a difference found refutes it; none found cannot confirm it
        entry["verdict"] = "not held" if low > 0 or high < 0 else "not resolved"
    return entry


# Writing ------------------------------------------------------------------------------------------------
def draw(report):
    """`zoo.comparison.report.draw_chart`'s chart of the measured groups, with each row's reported test
    accuracy marked beside its group."""
    comparison = report["comparison"]
    figure = draw_chart(comparison)
    axes = figure.axes[0]
    positions = {g["label"]: x for x, g in enumerate(comparison["groups"])}
    shown = False
    for entry in report["rows"]:
        reported = entry["reported"].get("test")
        if entry.get("group") in positions and reported is not None:
            axes.plot([positions[entry["group"]] - 0.12], [reported / 100.0], "x", color="C3", markersize=8,
                      label=None if shown else "reported by the paper", zorder=4)
            shown = True
    if shown:
        axes.legend(fontsize=7, loc="best")
    axes.set_title(f"{report['paper']}: measured test accuracy (mean, {report['confidence']:.0%} interval, runs as "
                   "dots) and the paper's (x)", fontsize=8)
    return figure


def write(report, out_dir, tensorboard=True):
    """Writes `reproduction.md`, `reproduction.json`, `reproduction.png` and (with `tensorboard`) the
    Markdown and the chart as TensorBoard summaries in `logs/`, all into `out_dir` at once: built in a
    staging folder beside it, then renamed into place (`zoo.fileio.publish_folder`).

    Returns:
        `{"markdown", "json", "chart", "logs"}`: the paths once in place.
    """
    from zoo.plotting import pyplot

    fileio.recover_folder(out_dir)  # what a killed writer left: the previous report put back, staging removed
    staged = fileio.staging_folder(out_dir)
    text = markdown.to_markdown(report)
    with fileio.atomic_write(os.path.join(staged, MARKDOWN_FILE), "w", encoding="utf-8") as file:
        file.write(text + "\n")
    fileio.write_json(os.path.join(staged, JSON_FILE), report)
    figure = draw(report)
    figure.savefig(os.path.join(staged, CHART_FILE), format="png", dpi=110, bbox_inches="tight")
    if tensorboard:
        write_tensorboard(text, figure, os.path.join(staged, LOGS_DIR))
    else:
        pyplot().close(figure)
    fileio.publish_folder(staged, out_dir, overwrite=True)
    return {"markdown": os.path.join(out_dir, MARKDOWN_FILE), "json": os.path.join(out_dir, JSON_FILE),
            "chart": os.path.join(out_dir, CHART_FILE), "logs": os.path.join(out_dir, LOGS_DIR) if tensorboard else None}

