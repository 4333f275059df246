"""Predicts SNLI labels with a trained run, an exported SavedModel or a TFLite export.

Example:
```
python predict.py --run-dir runs/rocktaschel_wbw --premise "A man plays a guitar." --hypothesis "A man sleeps."
python predict.py --saved-model models/rocktaschel_wbw --input pairs.jsonl --output predictions.jsonl
python predict.py --tflite models/rocktaschel_wbw_tflite --premise "A man plays." --hypothesis "A man sleeps."
python predict.py --run-dir runs/rocktaschel_wbw --premise "..." --hypothesis "..." --show-attention \
    --attention-png wbw.png
```
`--input` reads JSON lines with string fields `premise` and `hypothesis` (and, optionally,
`premise_binary_parse` and `hypothesis_binary_parse`: SNLI's binary parses, which the syntactic tree
models use; without them they use complete binary trees); the output has one line
`{"label": ..., "probabilities": {"entailment": ..., "neutral": ..., "contradiction": ...}}` per input
line, as `zoo.load(run_dir).predict`. For one pair, `--premise-parse` / `--hypothesis-parse` give the parses.
"""

import argparse
import json
import sys


class PredictError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def build_parser(prog="predict.py"):
    """The `predict.py` argument parser."""
    parser = argparse.ArgumentParser(prog=prog, description="Predict SNLI labels of sentence pairs.")
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--run-dir", help="a run directory written by train.py")
    model.add_argument("--saved-model", help="an exported SavedModel: MODELS/NAME (latest version) or MODELS/NAME/N")
    model.add_argument("--tflite", help="a TFLite export of export.py: its folder or its model.tflite")
    parser.add_argument("--premise", help="the premise of one pair")
    parser.add_argument("--hypothesis", help="the hypothesis of one pair")
    parser.add_argument("--premise-parse", default="",
                        help="the premise's binary parse, e.g. \"( ( Two women ) ( are sleeping ) )\" (tree models)")
    parser.add_argument("--hypothesis-parse", default="", help="the hypothesis's binary parse (tree models)")
    parser.add_argument("--input", help="a JSON-lines file of {\"premise\": ..., \"hypothesis\": ...}")
    parser.add_argument("--output", help="with --input: write the predictions here (default stdout)")
    parser.add_argument("--batch-size", type=int, default=256, help="pairs per model call (default 256)")
    parser.add_argument("--num-threads", type=int, default=None,
                        help="--tflite: the interpreter's threads (default: LiteRT's)")
    parser.add_argument("--show-attention", action="store_true",
                        help="print the alignment of the pair as a text heatmap")
    parser.add_argument("--attention-png", metavar="PATH", help="save the alignment of the pair as a PNG")
    return parser


PARSE_FIELDS = ("premise_binary_parse", "hypothesis_binary_parse")


def read_pairs(path):
    """Reads `(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)` tuples from a JSON-lines
    file (blank lines are skipped; missing parses are "").

    Raises:
        PredictError: a missing file, a line that is not an object with string premise and hypothesis, a
            parse that is not a string or is malformed (the message starts with FILE:LINE).
    """
    from zoo.data.trees import TreeFormatError, parse_binary_parse

    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as error:
        raise PredictError(f"cannot read {path}: {error}") from None
    pairs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise PredictError(f"{path}:{number}: not valid JSON ({error})") from None
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("premise", "hypothesis")):
            raise PredictError(f'{path}:{number}: expected an object with string fields "premise" and "hypothesis"')
        parses = []
        for field in PARSE_FIELDS:
            parse = record.get(field, "")
            if not isinstance(parse, str):
                raise PredictError(f'{path}:{number}: "{field}" must be a string')
            if parse.strip():
                try:
                    parse_binary_parse(parse, sentence=field)
                except TreeFormatError as error:
                    raise PredictError(f"{path}:{number}: {error}") from None
            parses.append(parse)
        pairs.append((record["premise"], record["hypothesis"], *parses))
    return pairs


def check_arguments(args):
    """Raises `PredictError` for inconsistent arguments."""
    single = args.premise is not None or args.hypothesis is not None
    if single and args.input:
        raise PredictError("give either --premise/--hypothesis or --input, not both")
    if not single and not args.input:
        raise PredictError("give --premise and --hypothesis, or --input FILE")
    if single and (args.premise is None or args.hypothesis is None):
        raise PredictError("--premise and --hypothesis go together")
    if args.input and (args.show_attention or args.attention_png):
        raise PredictError("--show-attention and --attention-png explain one pair: use --premise/--hypothesis")
    if args.input and (args.premise_parse or args.hypothesis_parse):
        raise PredictError("--premise-parse/--hypothesis-parse go with --premise/--hypothesis; "
                           "an --input file holds its parses in each line")
    if args.output and not args.input:
        raise PredictError("--output goes with --input")
    if args.batch_size < 1:
        raise PredictError("--batch-size must be positive")
    if args.num_threads is not None and (not args.tflite or args.num_threads < 1):
        raise PredictError("--num-threads goes with --tflite and must be positive")


def open_model(args):
    """The predictor of `--run-dir`, `--saved-model` or `--tflite` (`zoo.predictors.open_predictor`)."""
    from zoo.predictors import open_predictor

    kind, path = next((k, p) for k, p in (("run", args.run_dir), ("saved_model", args.saved_model),
                                          ("tflite", args.tflite)) if p)
    try:
        return open_predictor(path, kind=kind, num_threads=args.num_threads)
    except (FileNotFoundError, ValueError) as error:
        raise PredictError(str(error)) from None


def format_prediction(prediction):
    """The label and the three probabilities as text lines."""
    lines = [f"label: {prediction['label']}"]
    lines += [f"  {name:<14} {p:.4f}" for name, p in prediction["probabilities"].items()]
    return "\n".join(lines)


def show_attention(explanation, args):
    """Prints the text heatmap(s) and/or saves the PNG of the single pair's `Explanation`."""
    from zoo.runs.alignment import alignment_grid, save_attention_png, text_heatmap

    if args.show_attention:
        for name in explanation.maps:
            what = ("rows: premise, columns: hypothesis" if name == "attention_reverse"
                    else "rows: hypothesis, columns: premise")
            print(f"\n{name} ({what}; darker = more weight)")
            print(text_heatmap(*alignment_grid(explanation, name)))
    if args.attention_png:
        try:
            print(f"[predict] wrote {save_attention_png(explanation, args.attention_png)}")
        except OSError as error:
            raise PredictError(f"cannot write {args.attention_png}: {error}") from None


def write_predictions(predictions, path):
    """Writes one JSON line per prediction to `path` (stdout when None)."""
    rounded = [{**p, "probabilities": {name: round(float(v), 6) for name, v in p["probabilities"].items()}}
               for p in predictions]
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in rounded)
    if path is None:
        sys.stdout.write(text)
        return
    try:
        from zoo.fileio import atomic_write

        with atomic_write(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as error:
        raise PredictError(f"cannot write {path}: {error}") from None


def predict(args):
    """Runs the prediction `args` asks for."""
    check_arguments(args)
    pairs = read_pairs(args.input) if args.input else \
        [(args.premise, args.hypothesis, args.premise_parse, args.hypothesis_parse)]
    predictor = open_model(args)
    explanation = None
    if args.show_attention or args.attention_png:  # checked before anything is printed
        explanation = predictor.explain(args.premise, args.hypothesis, args.premise_parse, args.hypothesis_parse)
        if not explanation.maps:
            raise PredictError("this model has no attention to show (--show-attention, --attention-png)")
    try:
        predictions = predictor.predict(pairs, batch_size=args.batch_size)
    except ValueError as error:  # a parse whose leaves are not the sentence's tokens, or too deep
        raise PredictError(f"{args.input or 'the pair'}: {error}") from None
    if args.input:
        write_predictions(predictions, args.output)
        return predictions
    print(format_prediction(predictions[0]))
    if explanation is not None:
        show_attention(explanation, args)
    return predictions


def main(argv=None, prog="predict.py"):
    """Runs `predict.py`; a user error prints one line `predict.py: error: ...` and exits with status 2."""
    from zoo.commands.startup import import_tensorflow

    args = build_parser(prog).parse_args(argv)
    import_tensorflow()  # its informational start-up lines filtered (zoo.commands.startup)
    try:
        return predict(args)
    except PredictError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None

