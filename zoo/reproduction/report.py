"""The reproduction's report: the paper's table with the measured columns beside it, the paper's claimed
orderings as paired tests, computed with `zoo.comparison` (`report.compare`: groups of seeds, bootstrap
intervals, the paired bootstrap, McNemar's test) and written as Markdown, JSON, a chart and TensorBoard.

`build(...)` returns the report typed (`zoo.reproduction.records.ReproductionReport`); `zoo.reproduction.markdown`
formats it; `write` puts the files of one report in place together (a kill leaves the previous report or the
new one).
"""

import os

import numpy as np

from zoo import fileio
from zoo.comparison import statistics
from zoo.comparison.report import PairingError, compare, draw_chart, write_tensorboard
from zoo.comparison.runs import find_runs, group_runs
from zoo.reproduction import markdown
from zoo.reproduction.plan import departures, measured_departures
from zoo.reproduction.records import Conditions, Measured, ReportRow, ReproductionReport, TestedClaim, Trained

MARKDOWN_FILE, JSON_FILE, CHART_FILE, LOGS_DIR = "reproduction.md", "reproduction.json", "reproduction.png", "logs"


def build(paper, spec, directory, rows, failures=None, resamples=statistics.RESAMPLES, seed=0):
    """The report of a reproduction.

    Args:
        paper: the `Paper`. spec: the `ReproductionSpec`. directory: the reproduction directory.
        rows: the runnable rows that were asked for.
        failures: `{run_dir: error}` of runs that failed (from the sweep's summary).
        resamples, seed: of the bootstrap.

    Returns:
        the `zoo.reproduction.records.ReproductionReport`.
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
    results = {os.path.normpath(run.run_dir): run.results for run in records}
    run_records = {os.path.normpath(run.run_dir): run.record for run in records}
    entries, all_departures = [], []
    for row in paper.rows:
        label = row_label.get(row.id)
        entry = _row(paper, row, spec, selected, run_dirs.get(row.id, []),
                     comparison.group(label) if label else None, results, failures, run_records)
        entries.append(entry)
        for item in entry.departures:
            if item not in all_departures:
                all_departures.append(item)
    conditions = Conditions(departures=all_departures, levels_comparable=not all_departures, train=spec.train,
                            settings={k: v[0] for k, v in spec.settings.items()})
    return ReproductionReport(
        paper=paper.key, citation=paper.citation, data=paper.data, vectors=paper.vectors, tables=paper.tables,
        seeds=list(spec.seeds), directory=directory, confidence=comparison.confidence,
        resamples=comparison.resamples, rows=tuple(entries), conditions=conditions,
        claims=tuple(_claim(paper, claim, entries, row_label, comparison) for claim in paper.claims),
        comparison=comparison, notes=tuple(paper.notes))


def _row(paper, row, spec, selected, runs, group, results, failures, run_records=None):
    head = dict(id=row.id, printed=row.printed, name=row.name, reported=row.reported, model=row.model,
                settings=row.settings, members=[u.name for u in row.units()] if row.members else [],
                cited=row.cited, note=row.note)
    if not row.runnable:
        return ReportRow(**head, status="not runnable", verdict=f"not runnable: {row.not_runnable}")
    if row.id not in selected:
        return ReportRow(**head, status="not selected", verdict="not run (not in --rows)")
    failed = [f"seed {s}: {failures[d]}" for s, d in runs if d in failures]
    if group is None:
        return ReportRow(**head, status="not run", runs=[d for _, d in runs],
                         verdict="failed: " + "; ".join(failed) if failed else "not run yet: rerun the command")
    members = group.runs
    finished = [results[os.path.normpath(run.run_dir)] for run in members]
    found = departures(paper, row, spec)
    done = [(run_records[os.path.normpath(run.run_dir)], result) for run, result in zip(members, finished)
            if run_records and os.path.normpath(run.run_dir) in run_records]
    set_here = {key.partition(".")[0] for key in spec.settings}
    found += [item for item in measured_departures(paper, row, done)
              if not (item[0] == "hidden size" and "hidden_size" in set_here)]  # named once, as the setting
    if group.examples != paper.data["test_pairs"]:
        found.append(("test pairs", f"{group.examples:,}", f"{paper.data['test_pairs']:,}"))
    accuracy = group.test_accuracy
    measured = Measured(test=_percent(accuracy.mean), test_std=_percent(accuracy.std),
                        # one more run's interval (seeds + items): the paper's figure is one run, held against it
                        test_interval=_percents(accuracy.prediction_interval),
                        test_mean_interval=_percents(accuracy.mean_interval),
                        test_items_interval=_percents(accuracy.interval),
                        dev=_percent(group.dev_accuracy.mean), train=_percent(_train_accuracy(finished)),
                        params=(finished[0].parameters or {}).get("without_embeddings"))
    reported = row.reported.get("test")
    difference = None if reported is None or measured.test is None else measured.test - reported
    interval = measured.test_interval
    inside = None if interval is None or reported is None else interval[0] <= reported <= interval[1]
    if found:
        inside, verdict = None, "ordering only (not the paper's conditions)"
    else:
        verdict = (("no interval (one seed: its spread is unknown; run 2 or more)" if len(members) < 2
                    else "no interval") if inside is None else "as reported" if inside else
                   "below the paper" if difference < 0 else "above the paper")
    if failed:
        verdict += f"; failed: {'; '.join(failed)}"
    return ReportRow(**head, status="run", verdict=verdict, runs=[r.run_dir for r in members],
                     trained=trained_facts(done), group=group.label, seeds=[r.seed for r in members], failed=failed,
                     test_pairs=group.examples, departures=[list(item) for item in found], measured=measured,
                     difference=difference, reported_inside=inside)


def trained_facts(runs):
    """What the runs of a row read and trained (`[(RunRecord, RunResults)]`), for the report's heading: a
    `Trained` (the pairs of each split, each seed's epochs, the vocabulary sizes, the vectors' coverages)."""
    facts = Trained(pairs={}, epochs=[], vocabulary=[], coverage=[])
    for record, results in runs:
        for split, notes in (results.inputs or {}).items():
            if isinstance(notes, dict) and notes.get("pairs") is not None:
                facts.pairs.setdefault(split, [])
                if notes["pairs"] not in facts.pairs[split]:
                    facts.pairs[split].append(notes["pairs"])
        facts.epochs.append([record.seed, results.epochs_run, results.best_epoch])
        if record.vocabulary_size not in facts.vocabulary:
            facts.vocabulary.append(record.vocabulary_size)
        coverage = results.coverage
        if coverage and coverage not in facts.coverage:
            facts.coverage.append(coverage)
    return facts


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


def _percents(interval):
    return [_percent(v) for v in interval] if interval else None


def _claim(paper, claim, entries, row_label, comparison):
    by_id = {entry.id: entry for entry in entries}
    reported = [paper.row(claim.a).reported.get("test"), paper.row(claim.b).reported.get("test")]
    head = dict(kind=claim.kind, a=claim.a, b=claim.b, claim=claim.describe(paper), quote=claim.quote,
                where=claim.where, reported_difference=None if None in reported else reported[0] - reported[1])
    missing = [by_id[i] for i in (claim.a, claim.b) if not by_id[i].ran]
    if missing:
        return TestedClaim(**head, verdict="not tested: " + "; ".join(f"row {m.id} {m.verdict}" for m in missing))
    a, b = row_label[claim.a], row_label[claim.b]
    pair = comparison.pair_of(a, b)
    if pair is None or not pair.tested:
        return TestedClaim(**head, verdict="not tested: " + (pair.skipped if pair else "the rows were not paired"))
    sign = 1 if pair.a_label == a else -1
    runs = pair.runs
    # the verdict's test: the run's (seeds + items) where both rows have runs enough; else the items' only
    test = runs if runs else pair
    low, high = sorted(sign * 100.0 * v for v in test.interval)
    difference = sign * 100.0 * pair.difference
    p_value_holm = (runs.p_value if runs.p_value_holm is None else runs.p_value_holm) if runs else None
    # a difference found: by the run-level test's Holm-adjusted p-value (over the claims tested together),
    # or, items only, by the paired interval leaving 0 out
    found = p_value_holm < 1 - comparison.confidence if runs else (low > 0 or high < 0)
    if claim.kind == "better":
        verdict = "held" if found and difference > 0 else "not held" if found else "not resolved"
    else:  # no difference claimed: a difference found refutes it; none found cannot confirm it
        verdict = "not held" if found else "not resolved"
    if verdict == "not resolved" and runs:
        needed = runs.seeds_needed
        verdict += (f" (about {needed} seeds per row would resolve a difference this large)" if needed else
                    " (no number of seeds would: the test items' noise alone keeps the power under 80%)"
                    if difference else "")
    elif not runs:
        verdict += " (items only: one seed, its spread unknown)"
    return TestedClaim(**head, verdict=verdict, difference=difference, interval=[low, high], p_value=test.p_value,
                       mcnemar=pair.mcnemar, test="runs" if runs else "items only",
                       items_interval=sorted(sign * 100.0 * v for v in pair.interval), p_value_holm=p_value_holm,
                       seeds_needed=runs.seeds_needed if runs else None)


# Writing ------------------------------------------------------------------------------------------------
def draw(report):
    """`zoo.comparison.report.draw_chart`'s chart of the measured groups, with each row's reported test
    accuracy marked beside its group."""
    comparison = report.comparison
    figure = draw_chart(comparison, interval="prediction_interval")  # what each row's verdict uses
    axes = figure.axes[0]
    positions = {g.label: x for x, g in enumerate(comparison.groups)}
    shown = False
    for entry in report.rows:
        reported = entry.reported.get("test")
        if entry.group in positions and reported is not None:
            axes.plot([positions[entry.group] - 0.12], [reported / 100.0], "x", color="C3", markersize=8,
                      label=None if shown else "reported by the paper", zorder=4)
            shown = True
    if shown:
        axes.legend(fontsize=7, loc="best")
    axes.set_title(f"{report.paper}: measured test accuracy (mean, {report.confidence:.0%} interval of one more "
                   "run, runs as dots) and the paper's (x)", fontsize=8)
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
    fileio.write_json(os.path.join(staged, JSON_FILE), report.to_json())
    figure = draw(report)
    figure.savefig(os.path.join(staged, CHART_FILE), format="png", dpi=110, bbox_inches="tight")
    if tensorboard:
        write_tensorboard(text, figure, os.path.join(staged, LOGS_DIR))
    else:
        pyplot().close(figure)
    fileio.publish_folder(staged, out_dir, overwrite=True)
    return {"markdown": os.path.join(out_dir, MARKDOWN_FILE), "json": os.path.join(out_dir, JSON_FILE),
            "chart": os.path.join(out_dir, CHART_FILE),
            "logs": os.path.join(out_dir, LOGS_DIR) if tensorboard else None}

