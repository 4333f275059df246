"""Exports a trained run for serving: a SavedModel for TF Serving, or a TFLite model.

Example:
```
python export.py --run-dir runs/rocktaschel_wbw                       # models/rocktaschel_wbw/1/
python export.py --run-dir runs/rocktaschel_wbw --out models/wbw --version 3
python export.py --run-dir runs/bowman_lstm --format tflite           # models/bowman_lstm_tflite/model.tflite
```
See docs/serving.md for the signatures, the TF Serving commands and the request formats.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FORMATS = ("saved_model", "tflite")


def build_parser():
    """The `export.py` argument parser."""
    parser = argparse.ArgumentParser(prog="export.py", description="Export a trained run for serving.")
    parser.add_argument("--run-dir", required=True, help="the run directory written by train.py")
    parser.add_argument("--format", choices=FORMATS, default="saved_model",
                        help="saved_model (TF Serving, default) or tflite (LiteRT, token ids in)")
    parser.add_argument("--out", default=None,
                        help="saved_model: the model folder MODELS/NAME holding numbered versions "
                             "(default models/<model name>); tflite: the output folder "
                             "(default models/<model name>_tflite)")
    parser.add_argument("--version", type=int, default=None,
                        help="saved_model: the version number (default: the next free one)")
    parser.add_argument("--tflite-batch-size", type=int, default=1,
                        help="tflite: the fixed number of pairs per invocation (default 1)")
    parser.add_argument("--overwrite", action="store_true", help="tflite: replace an existing model.tflite")
    return parser


def export(args):
    """Loads the run and writes the export `args` asks for.

    Returns:
        the path written (version directory or model.tflite).

    Raises:
        ValueError, FileNotFoundError: user errors (printed as one line by `main`).
    """
    import zoo
    from zoo.export import export_saved_model
    from zoo.runs.layout import load_config

    model_name = load_config(args.run_dir)["model"]
    run = zoo.load(args.run_dir)
    if args.format == "tflite":
        from zoo.export.tflite import export_tflite

        if args.version is not None:
            raise ValueError("--version applies to --format saved_model only")
        out = args.out or os.path.join("models", f"{model_name}_tflite")
        return export_tflite(run, out, batch_size=args.tflite_batch_size, overwrite=args.overwrite)
    return export_saved_model(run, args.out or os.path.join("models", model_name), args.version)


def main(argv=None):
    """Runs `export.py`; a user error prints one line `export.py: error: ...` and exits with status 2."""
    args = build_parser().parse_args(argv)
    try:
        path = export(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"export.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"[export] wrote {path}")
    return path


if __name__ == "__main__":
    main()
