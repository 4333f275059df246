"""A reproduction's report (`zoo.reproduction.report.build`, a `ReproductionReport`) as Markdown: the heading
with the paper's conditions and this run's, the paper's table with the measured columns, the claimed orderings
with their paired tests, the notes, and `nli-zoo compare`'s own tables (per class, McNemar) as the details."""

import json

from zoo.comparison.report import to_markdown as comparison_markdown
from zoo.reproduction.tables import format_count

# What the paper sets (the other departures are settings of the zoo's presets).
PAPER_CONDITIONS = ("data", "word vectors", "test pairs", "training pairs", "dev pairs", "hidden size",
                    "epochs trained", "--max-train-examples", "--max-eval-examples")


def _figure(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value):
    return "-" if value is None else f"{value:+.2f}"


def _p(value):
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.1e}"


def heading(report):
    """The lines above the table: the paper, its data and vectors, and how this run departs from them."""
    data, vectors = report.data, report.vectors
    seeds = ", ".join(str(s) for s in report.seeds)
    tables = "; ".join(f"{name}: {table['caption']}" for name, table in report.tables.items())
    lines = [f"# Reproduction of {report.citation}", "",
             f"The paper's tables ({tables}) beside this reproduction: {len(report.seeds)} seed(s) per row "
             f"({seeds}), runs in {report.directory}/runs.", "",
             f"- **The paper's data**: {data['dataset']} ({data['test_pairs']:,} test pairs): \"{data['as_printed']}\" "
             f"({data['where']}).",
             f"- **The paper's word vectors**: {vectors['name']}: \"{vectors['as_printed']}\" ({vectors['where']}); "
             "rows quoted from earlier papers use those papers' vectors (their models' presets)."]
    train = report.conditions.train
    ours = [f"data {train.get('data_dir') or train.get('dataset') or 'snli'}",
            f"word vectors {train.get('embeddings') or 'each row its paper vectors'}"]
    ours += [f"{k}={v}" for k, v in report.conditions.settings.items()]
    ours += [f"{k.replace('_', '-')} {v}" for k, v in train.items() if k not in ("dataset", "data_dir", "embeddings")]
    lines.append(f"- **This reproduction**: {', '.join(ours)}.")
    lines += trained_lines(report)
    departures = report.conditions.departures
    if departures:
        merged = {}
        for what, value, paper in departures:
            merged.setdefault((what, value), [])
            if paper not in merged[(what, value)]:
                merged[(what, value)].append(paper)
        shown = "; ".join(f"{what} {value} (the {'paper' if what in PAPER_CONDITIONS else 'preset'}'s: "
                          f"{', '.join(papers)})" for (what, value), papers in merged.items())
        lines += ["", f"> **Not the paper's conditions**: {shown}. The measured accuracies cannot be held against "
                      "the reported ones: the verdicts speak of the orderings only (the claims below)."]
    return lines


def trained_lines(report):
    """What the runs actually read and trained: the pairs of each split, the vocabulary and the vectors'
    coverage, the epochs of each row's seeds (early stopping included)."""
    facts = [(entry.id, entry.trained) for entry in report.rows if entry.trained]
    if not facts:
        return []
    names = {"train": "training", "validation": "dev", "test": "test"}
    pairs = {}
    for _, trained in facts:
        for split, counts in trained.pairs.items():
            pairs.setdefault(split, set()).update(counts)
    read = "; ".join(f"{names.get(split, split)} {', '.join(f'{n:,}' for n in sorted(counts))}"
                     for split, counts in pairs.items())
    vocabulary = sorted({v for _, trained in facts for v in trained.vocabulary if v is not None})
    coverage = [c for _, trained in facts for c in trained.coverage]
    covered = ", ".join(sorted({f"{100 * c.get('types', 0):.1f}% of word types, {100 * c.get('tokens', 0):.1f}% of "
                                "tokens" for c in coverage if c.get("types") is not None}))
    epochs = "; ".join(f"{row_id}: " + ", ".join(f"seed {seed} {run} (best {best})" for seed, run, best in
                                                   trained.epochs) for row_id, trained in facts)
    return [f"- **What the runs read and trained**: pairs read ({read or 'not recorded'}); vocabulary "
            f"{', '.join(f'{v:,}' for v in vocabulary) or '-'} words; word vectors cover {covered or '-'}; epochs "
            f"trained (early stopping included): {epochs}."]


def rows_table(report):
    """The paper's table with the measured columns."""
    level = f"{report.confidence:.0%}"
    columns = {c for table in report.tables.values() for c in table["columns"]}
    sized = "size" in columns
    head = ["row (as printed)", *(["size"] if sized else []), "model", "test: paper",
            "test: measured, mean ± std (seeds)", f"{level} interval of one more run", f"{level} interval of the mean",
            "Δ test", "paper's in one run's interval",
            "dev: paper / measured", "train: paper / measured", "|θ|_M: paper / measured", "verdict"]
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in head) + " |", "|" + "---|" * len(head)]
    for entry in report.rows:
        reported, measured = entry.reported, entry.measured
        tables = ", ".join(entry.printed)
        name = f"{entry.name} ({tables})" + (f" [{entry.cited}]" if entry.cited else "")
        model = entry.model or "-"
        if entry.members:
            model = f"{model} of {' + '.join(entry.members)}"
        elif entry.settings:
            model += " " + " ".join(f"{k}={json.dumps(v)}" for k, v in entry.settings.items())
        cells = [name, *([reported.get("size") or "-"] if sized else []), model, _figure(reported.get("test"))]
        if entry.ran:
            std = f" ± {measured.test_std:.2f}" if measured.test_std is not None else ""
            seeds = ",".join(str(s) for s in entry.seeds)
            interval, mean_interval = measured.test_interval, measured.test_mean_interval
            inside = entry.reported_inside
            cells += [f"{measured.test:.2f}{std} ({seeds})",
                      "-" if not interval else f"[{interval[0]:.2f}, {interval[1]:.2f}]",
                      "-" if not mean_interval else f"[{mean_interval[0]:.2f}, {mean_interval[1]:.2f}]",
                      _signed(entry.difference),
                      "-" if inside is None else "yes" if inside else "no",
                      f"{_figure(reported.get('dev'))} / {_figure(measured.dev, 2)}",
                      f"{_figure(reported.get('train'))} / {_figure(measured.train, 2)}",
                      f"{reported.get('params') or '-'} / {format_count(measured.params)}"]
        else:
            cells += ["", "", "", "", "", f"{_figure(reported.get('dev'))} / -",
                      f"{_figure(reported.get('train'))} / -",
                      f"{reported.get('params') or '-'} / -"]
        cells.append(entry.verdict)
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    tested = sorted({e.test_pairs for e in report.rows if e.test_pairs})
    seeds = len(report.seeds)
    lines += ["", f"Accuracies in percent. Measured: the mean over the seeds of the test accuracy ± the standard "
                  "deviation over the seeds. Both intervals carry the two sources of noise, the seed (the spread "
                  f"between the runs) and the {', '.join(f'{n:,}' for n in tested) or '-'} test pairs (their "
                  "variance), with Student's t at Satterthwaite's degrees of freedom: one more run's interval is where "
                  "a further run of the row would fall, and the paper's figure, one run, is held against it; the "
                  "mean's is where the mean of many runs would fall. With one seed the seed spread is unknown and "
                  "there is no interval"
                  + (f"; with {seeds} seeds it is measured on {seeds} runs, so t is large and the intervals wide: "
                     "more seeds narrow them" if 2 <= seeds < 5 else "")
              + ". Δ: measured − reported. Train, measured: the training accuracy of each run's best epoch "
                  "as Keras reports it (its running mean over the epoch, dropout on), not a pass over the training "
                  "set. |θ|_M: trainable parameters outside the word vectors."]
    return lines


def claims_table(report):
    level = f"{report.confidence:.0%}"
    if not report.claims:
        return ["The paper claims no ordering between its rows."]
    lines = ["| claim | the paper's words | paper: Δ test | measured: Δ test | "
             f"{level} interval (test) | p (Holm) | verdict |", "|---|---|---|---|---|---|---|"]
    for claim in report.claims:
        interval = claim.interval
        p_value = "-"
        if claim.tested:
            p_value = _p(claim.p_value) + (f" ({_p(claim.p_value_holm)})" if claim.test == "runs" else "")
        lines.append("| " + " | ".join([
            claim.claim, f"\"{claim.quote}\" ({claim.where})", _signed(claim.reported_difference),
            _signed(claim.difference),
            f"[{interval[0]:+.2f}, {interval[1]:+.2f}] ({claim.test})" if interval else "-",
            p_value, f"**{claim.verdict}**"]).replace("\n", " ") + " |")
    lines += ["", "Each claim is tested with the run as its unit (*runs*): Welch's t on the two rows' runs, the "
                  "paired test items' variance added, so that neither one lucky seed nor the items alone decide it; "
                  "its p-value is Holm-adjusted over the claims tested together. A > B: *held* when the adjusted "
                  "p-value is below "
                  f"{1 - report.confidence:.2g} and A is ahead, *not held* when it is and B is ahead, *not "
                  "resolved* otherwise, with the number of seeds per row that would resolve a difference as large "
                  "as the measured one (a power estimate from the measured spread). A ≈ B (the paper says they do not "
                  "differ): *not held* when a difference is found; otherwise *not resolved*, since a test can refute "
                  "that claim but never confirm it. With one seed a row's spread is unknown: the test is the paired "
                  "bootstrap over the items (*items only*), which says nothing of other seeds."]
    return lines


def to_markdown(report):
    """The whole report as Markdown."""
    lines = heading(report) + ["", "## The paper's table and this reproduction", ""] + rows_table(report)
    lines += ["", "## The paper's claims, as paired tests", ""] + claims_table(report)
    notes = [f"{entry.name} ({entry.id}): {entry.note}" for entry in report.rows if entry.note]
    notes += report.notes
    if notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    if report.comparison.groups:
        lines += ["", "## Details (as nli-zoo compare shows them)", "", comparison_markdown(report.comparison)]
    return "\n".join(lines)
