"""The demo's Gradio page: a premise and a hypothesis in, each model's label, probabilities, attention
heatmaps and (tree models) trees out, one column per model.

Gradio is the optional extra `.[demo]`: this module imports it at its head, so import it only after
checking that Gradio is there (`zoo.commands.demo` does).

Example:
```python
app = build_app([open_model("runs/rocktaschel_wbw"), open_model("runs/esim")])
url = launch(app)      # http://127.0.0.1:7860/; app.block_thread() waits, app.close() stops
```
The page's API endpoint `/predict` (what `gradio_client` calls) takes
`(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)` and returns, per model in turn,
the label output (`{"label": ..., "confidences": [...]}`), one heatmap image per attention map the
model has (none for a model without attention; the image component's label is the map's caption) and
the trees' text ("" for a model without trees). `/example` is what a click on a shipped example does:
it takes the example's number and returns the pair (and, where a model reads them, its parses) put in
the boxes, then `/predict`'s outputs for it.
"""

import html
import logging

import gradio as gr

from zoo.data.snli import load_snli
from zoo.data.trees import TreeFormatError, parse_binary_parse
from zoo.demo.display import describe_map, heatmaps, is_over_tree_nodes, tree_drawings
from zoo.runs.alignment import near_uniform
from zoo.runs.evaluation import CHANCE, near_chance
from zoo.runs.predictor import describe_score

logger = logging.getLogger(__name__)

# Longest sentence the page takes (in words): SNLI's longest premise has 82 tokens; a heatmap of
# hundreds of columns is unreadable, and the models were trained on short sentences.
MAX_WORDS = 200
EXAMPLES = 6  # shipped SNLI test pairs offered as examples
PROBE = ("A man is playing a guitar.", "A person plays music.")  # run once per model at start-up
# System fonts only: the page is served offline (Gradio's default theme loads Google Fonts).
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "Consolas", "monospace"])


class InputError(ValueError):
    """A pair the demo cannot take (shown on the page as one message)."""


def check_pair(premise, hypothesis, premise_parse, hypothesis_parse, parses_read):
    """Raises `InputError` (one sentence a user can act on) for an empty or overlong sentence or a
    malformed parse (parses are checked only where a model reads them)."""
    for name, text in (("premise", premise), ("hypothesis", hypothesis)):
        if not text or not text.strip():
            raise InputError(f"The {name} is empty: type a sentence.")
        words = len(text.split())
        if words > MAX_WORDS:
            raise InputError(f"The {name} has {words:,} words; the demo takes sentences of at most "
                             f"{MAX_WORDS} words.")
    if parses_read:
        for name, parse in (("premise", premise_parse), ("hypothesis", hypothesis_parse)):
            if parse and parse.strip():
                try:
                    parse_binary_parse(parse, sentence=name)
                except TreeFormatError as error:
                    raise InputError(f"Malformed binary parse: {error}") from None


def shipped_examples(count=EXAMPLES):
    """The first `count` pairs of the shipped SNLI sample's test split, with their binary parses."""
    splits, _ = load_snli("snli_sample")
    return [[e["premise"], e["hypothesis"], e["premise_binary_parse"], e["hypothesis_binary_parse"]]
            for e in splits["test"][:count]]


def first_result_note(score, probe):
    """One line under a model's name where its recorded test accuracy is near chance or its attention near
    uniform ("" otherwise): what a model trained on the shipped sample looks like, said so."""
    facts = []
    if score is not None and near_chance(score["accuracy"]):
        facts.append(f"its test accuracy is near chance ({CHANCE:.2f})")
    if probe.maps and all(near_uniform(weights) for weights in probe.maps.values()):
        facts.append("its attention is near uniform")
    if not facts:
        return ""
    return (f"*Not trained enough yet: {' and '.join(facts)}. The papers' models reach 77-89% after training on "
            "SNLI's 550,000 pairs (`nli-zoo train --model NAME`).*")


class Demo:
    """The models and what one click computes.

    Args:
        models: `zoo.demo.models.DemoModel`s (one or two).
        examples: the shipped pairs offered (`shipped_examples()`'s rows).
    """

    def __init__(self, models, examples=None):
        self.models = list(models)
        self.parses_read = any(m.reads_parse_trees for m in self.models)
        self.examples = shipped_examples() if examples is None else examples
        # One pair through each model: loads its graph now rather than on the first click, and tells which
        # maps it draws (one image each on the page) and whether it attends over tree nodes (then the page
        # shows the trees).
        probes = [m.predictor.explain(*PROBE) for m in self.models]
        self.captions = [[describe_map(probe, name) for name in probe.maps] for probe in probes]
        self.shows_trees = [m.reads_parse_trees or is_over_tree_nodes(probe) for m, probe in zip(self.models, probes)]
        self.scores = [m.predictor.test_score() for m in self.models]
        self.notes = [first_result_note(score, probe) for score, probe in zip(self.scores, probes)]

    def example(self, index):
        """A click on shipped example `index`: the pair put in the boxes (its parses too where a model reads
        them), then every model's outputs on it (as `predict`)."""
        premise, hypothesis, premise_parse, hypothesis_parse = self.examples[int(index)]
        boxes = [premise, hypothesis] + ([premise_parse, hypothesis_parse] if self.parses_read else [])
        return boxes + self.predict(premise, hypothesis, premise_parse, hypothesis_parse)

    def predict(self, premise, hypothesis, premise_parse="", hypothesis_parse=""):
        """Every model's outputs on the pair, in turn: its probabilities, one image per map, its trees' text.

        Raises:
            gradio.Error: bad input, or a model that cannot take the pair (its message, no traceback).
        """
        premise_parse, hypothesis_parse = premise_parse or "", hypothesis_parse or ""
        try:
            check_pair(premise, hypothesis, premise_parse, hypothesis_parse, self.parses_read)
        except InputError as error:
            raise gr.Error(str(error), print_exception=False) from None
        outputs = []
        for model in self.models:
            cut = model.cut_note(premise, hypothesis)  # as the commands say it (a toast on the page, a line here)
            if cut:
                logger.warning(f"{cut}")
                gr.Warning(cut)
            parses = (premise_parse, hypothesis_parse) if model.reads_parse_trees else ("", "")
            try:
                explanation = model.predictor.explain(premise, hypothesis, *parses)
            except ValueError as error:  # a parse whose leaves are not the sentence's tokens, too deep a parse
                raise gr.Error(f"{model.name}: {error}", print_exception=False) from None
            except Exception as error:  # noqa: BLE001 (the page shows one line; the terminal gets it whole)
                logger.error(f"{model.name} failed on {premise!r} / {hypothesis!r}:", exc_info=True)
                raise gr.Error(f"{model.name} failed: {type(error).__name__}: {error}", print_exception=False) \
                    from None
            images = [image for image, _ in heatmaps(explanation, model.name)]
            outputs += [explanation.probabilities, *images, tree_drawings(explanation, model.reads_parse_trees, parses)]
        return outputs


def example_card(premise, hypothesis):
    """A shipped example as the page shows it: both sentences whole (HTML, escaped)."""
    return f"<b>P</b> {html.escape(premise)}<br><b>H</b> {html.escape(hypothesis)}"


def build_app(models):
    """The page of one or two models (`gradio.Blocks`, not launched).

    Args:
        models: `zoo.demo.models.DemoModel`s.
    """
    demo = Demo(models)
    names = " vs ".join(m.name for m in demo.models)
    with gr.Blocks(title=f"nli-zoo demo: {names}", analytics_enabled=False) as app:
        gr.Markdown(f"## nli-zoo demo: {names}\nType a premise and a hypothesis (or click a shipped SNLI pair "
                    "below): each model gives its label, the three probabilities and what it attended to. "
                    "Heatmaps are coloured over each map's own range.")
        with gr.Row():
            # One line (Enter predicts), growing to four for a long sentence.
            premise = gr.Textbox(label="Premise", lines=1, max_lines=4,
                                 placeholder="A man is playing a guitar on stage.")
            hypothesis = gr.Textbox(label="Hypothesis", lines=1, max_lines=4, placeholder="A person plays music.")
        with gr.Accordion("Binary parses (optional: for the models that read parse trees)",
                          open=False, visible=demo.parses_read):
            with gr.Row():
                premise_parse = gr.Textbox(label="Premise binary parse",
                                           placeholder="( ( A man ) ( ( is ( playing ( a guitar ) ) ) . ) )")
                hypothesis_parse = gr.Textbox(label="Hypothesis binary parse",
                                              placeholder="( ( A person ) ( ( plays music ) . ) )")
        button = gr.Button("Predict", variant="primary")
        inputs = [premise, hypothesis, premise_parse, hypothesis_parse]
        # The shipped pairs, whole (Gradio's own examples table cuts a sentence at 60 characters); a click
        # fills the boxes and predicts.
        examples = gr.Dataset(components=[gr.HTML(visible=False)], label="Shipped SNLI test pairs (click one)",
                              samples=[[example_card(row[0], row[1])] for row in demo.examples], type="index",
                              layout="gallery")
        per_model = []  # each model's output components: its label, its maps, its trees
        with gr.Row(equal_height=False):
            for model, score, note in zip(demo.models, demo.scores, demo.notes):
                with gr.Column():
                    data = f" · {describe_score(score)}" if score is not None else ""
                    said = [f"**{model.note}**" if model.note else "", note or ""]  # an unfinished run; near chance
                    gr.Markdown(f"### {model.name}\n`{model.source}`{data}" + "".join(f"\n\n{s}" for s in said if s))
                    per_model.append([gr.Label(label="label and probabilities", num_top_classes=3)])
        # Every map in one row that wraps, each model's in turn (its name in the caption): a model with two
        # maps beside a model with one leaves no empty column.
        with gr.Row(equal_height=False):
            for model, captions, outputs in zip(demo.models, demo.captions, per_model):
                for caption in captions:
                    with gr.Column(min_width=360):  # the caption above the image (a label would cover its top)
                        gr.Markdown(f"**{model.name}**: {caption}")
                        outputs.append(gr.Image(label=caption, show_label=False, type="pil", format="png",
                                                interactive=False, buttons=["download", "fullscreen"]))
        with gr.Row(equal_height=False, visible=any(demo.shows_trees)):
            for model, shows_trees, outputs in zip(demo.models, demo.shows_trees, per_model):
                with gr.Column(visible=shows_trees):  # monospaced: the drawing lines up
                    outputs.append(gr.Code(label=f"trees {model.name} read", language=None, interactive=False,
                                           lines=8, visible=shows_trees))
        outputs = [component for components in per_model for component in components]
        button.click(demo.predict, inputs, outputs, api_name="predict")
        for box in (premise, hypothesis):  # Enter in a box predicts too (the same endpoint, not listed twice)
            box.submit(demo.predict, inputs, outputs, api_visibility="private")
        shown = inputs if demo.parses_read else inputs[:2]  # parses filled only where a model reads them
        examples.click(demo.example, [examples], shown + outputs, api_name="example")
    return app


def launch(app, port=None):
    """Serves the page on 127.0.0.1 only (no share link: the demo runs offline) and returns once it is
    up (`app.block_thread()` then waits until Ctrl+C; `app.close()` stops it).

    Args:
        app: the page of `build_app`.
        port: the port (None: Gradio's first free one from 7860).

    Returns:
        the page's local URL.

    Raises:
        OSError: the port is taken (or no free port was found).
    """
    app.queue(default_concurrency_limit=1)  # one model call at a time: TensorFlow already uses every core
    _, url, _ = app.launch(server_name="127.0.0.1", server_port=port, share=False, prevent_thread_lock=True,
                           quiet=True, show_error=True, theme=THEME, footer_links=["api"])
    return url
