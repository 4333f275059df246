"""`nli-zoo demo`: a local Gradio page to try one or two models on one's own sentence pairs.

- `zoo.demo.models`: `open_model(source)`, a run directory, preset, SavedModel or TFLite export as a
  predictor (the one place the demo loads models);
- `zoo.demo.display`: an `Explanation`'s heatmaps (`zoo.plotting`) and tree drawings;
- `zoo.demo.app`: the page (`build_app`, `launch`); it imports Gradio, the optional extra
  `.[demo]`, so it is imported only by the command, after checking that Gradio is installed.

See docs/demo.md.
"""
