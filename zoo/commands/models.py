"""`nli-zoo models`: the registered models, or one model's paper preset.

Example:
```
nli-zoo models                    # every name, its paper's |θ|_M (parameters without word vectors), the paper
nli-zoo models 'rocktaschel*'     # names matching a pattern
nli-zoo models esim               # the preset: model, train and data settings, as JSON
```
The names and presets are read from the model files' source (`zoo.catalog`): no model file, Keras or
TensorFlow is imported.
"""

import json

from zoo.commands.messages import output
from zoo.commands.parsing import CommandParser, fail
from zoo.registry import get_preset, get_spec, list_models


def build_parser(prog="nli-zoo models"):
    """The `nli-zoo models` argument parser."""
    parser = CommandParser(prog=prog, description="List the registered models, or show a preset.")
    parser.add_argument("name", nargs="?", default="*",
                        help="a registered name (shows its preset) or a shell pattern (lists the names)")
    return parser


def main(argv=None, prog="nli-zoo models"):
    """Prints the list or the preset; returns the printed object. An unknown name exits with status 2."""
    args = build_parser(prog).parse_args(argv)
    names = list_models(args.name)
    if args.name in names:
        spec = get_spec(args.name)
        shown = {"name": args.name, "class": spec.class_name, "paper": spec.paper,
                 "paper_parameters": spec.paper_params, "attention": list(spec.attention),
                 "preset": get_preset(args.name).to_json()}
        output(json.dumps(shown, indent=2))
        return shown
    if not names:
        fail(prog, f"no registered model matches {args.name!r}; `{prog}` lists them all")
    width = max(len(n) for n in names)
    lines = []
    for name in names:
        spec = get_spec(name)
        params = "-" if spec.paper_params is None else format_count(spec.paper_params)
        lines.append(f"{name:<{width}}  |θ|_M {params:>5}  {spec.paper}")
    output("\n".join(lines))
    return names


def format_count(count):
    """A parameter count as the papers write it: 544_000 -> `544k`, 7_700_000 -> `7.7M`."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:g}M"
    if count >= 1_000:
        return f"{count / 1_000:g}k"
    return str(count)
