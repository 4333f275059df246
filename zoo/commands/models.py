"""`nli-zoo models`: the registered models, or one model's paper preset.

Example:
```
nli-zoo models                    # every name, its paper and |θ|_M
nli-zoo models 'rocktaschel*'     # names matching a pattern
nli-zoo models esim               # the preset: model, train and data settings, as JSON
```
"""

import argparse
import json
import sys


def build_parser(prog="nli-zoo models"):
    """The `nli-zoo models` argument parser."""
    parser = argparse.ArgumentParser(prog=prog, description="List the registered models, or show a preset.")
    parser.add_argument("name", nargs="?", default="*",
                        help="a registered name (shows its preset) or a shell pattern (lists the names)")
    return parser


def main(argv=None, prog="nli-zoo models"):
    """Prints the list or the preset; returns the printed object. An unknown name exits with status 2."""
    from zoo.registry import get_preset, get_spec, list_models

    args = build_parser(prog).parse_args(argv)
    names = list_models(args.name)
    if args.name in names:
        spec = get_spec(args.name)
        shown = {"name": args.name, "class": spec.model_class.__name__, "paper": spec.paper,
                 "paper_parameters": spec.paper_params, "attention": list(spec.attention),
                 "preset": get_preset(args.name)}
        print(json.dumps(shown, indent=2))
        return shown
    if not names:
        print(f"{prog}: error: no registered model matches {args.name!r}; `{prog}` lists them all", file=sys.stderr)
        raise SystemExit(2)
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {get_spec(name).paper}")
    return names
