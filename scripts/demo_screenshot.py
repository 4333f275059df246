"""A screenshot of the `nli-zoo demo` page with a typed pair, taken by headless Chromium (docs/images/demo.png).

Serves the page of one or two models on a free loopback port, opens it in headless Chromium, types the
premise and the hypothesis into the page's boxes, clicks Predict, waits for every heatmap and saves the
whole page as a PNG (reduced to a 256-colour palette to keep it small). Chromium is driven through the
DevTools protocol over a pipe (`--remote-debugging-pipe`: file descriptors 3 and 4), so nothing but the
standard library talks to it.

Example:
```
apt-get install -y chromium
python scripts/demo_screenshot.py runs/rocktaschel_wbw runs/esim --out docs/images/demo.png
```
"""

import base64
import fcntl
import io
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from zoo.commands.parsing import CommandParser


PREMISE = "A man in a blue shirt is playing a guitar on stage."
HYPOTHESIS = "A musician is performing."


class DevTools:
    """The DevTools protocol of a Chromium started with `--remote-debugging-pipe` (JSON messages ended by
    a NUL byte: written to the browser's fd 3, read from its fd 4)."""

    def __init__(self, chromium, url, width, height, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def child_pipes():  # the browser reads commands on fd 3 and writes replies on fd 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]  # free 3, 4
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", url],
            preexec_fn=child_pipes, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4))  # kept open in the child (fds closing runs after child_pipes)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer, self.next_id, self.session = b"", 0, None

    def send(self, method, **params):
        """Runs one command (on the attached page once `attach` ran) and returns its result."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def attach(self):
        """Attaches to the browser's page."""
        deadline = time.time() + 30
        while time.time() < deadline:
            pages = [t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            if pages:
                self.session = self.send("Target.attachToTarget", targetId=pages[0]["targetId"],
                                         flatten=True)["sessionId"]
                return
            time.sleep(0.2)
        raise RuntimeError("Chromium opened no page")

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    def wait_for(self, expression, what, timeout=120):
        deadline = time.time() + timeout
        while not self.evaluate(expression):
            if time.time() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.25)

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        os.close(self.to_browser)
        os.close(self.from_browser)


def type_into(devtools, label, text):
    """Focuses the textbox whose label is `label` and types `text` (as keyboard input would insert it)."""
    found = devtools.evaluate(f"""(() => {{
        for (const box of document.querySelectorAll('textarea, input[type=text]')) {{
            const holder = box.closest('label') || box.parentElement.closest('label');
            if (holder && holder.innerText.trim().startsWith({json.dumps(label)})) {{ box.focus(); return true; }}
        }}
        return false; }})()""")
    if not found:
        raise RuntimeError(f"no textbox labelled {label!r} on the page")
    devtools.send("Input.insertText", text=text)


def screenshot(url, out, maps, width=1360, chromium="chromium", premise=PREMISE, hypothesis=HYPOTHESIS):
    """Types the pair into the page at `url`, predicts, and saves the page once `maps` heatmaps show."""
    from PIL import Image

    with tempfile.TemporaryDirectory() as profile:
        devtools = DevTools(chromium, url + "?__theme=light", width, 900, profile)
        try:
            devtools.attach()
            devtools.send("Page.enable")
            devtools.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
                          mobile=False)
            devtools.wait_for("document.querySelectorAll('textarea').length >= 2", "the page")
            type_into(devtools, "Premise", premise)
            type_into(devtools, "Hypothesis", hypothesis)
            devtools.evaluate("[...document.querySelectorAll('button')].find(b => b.innerText.trim() == 'Predict')"
                              ".click()")
            shown = ("[...document.images].filter(i => i.src.includes('file=') && i.complete && "
                     f"i.naturalWidth > 0).length >= {maps}")
            devtools.wait_for(shown, f"{maps} heatmaps")
            time.sleep(1.0)  # the last layout changes
            height = int(devtools.evaluate("document.documentElement.scrollHeight"))
            devtools.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                          mobile=False)
            time.sleep(0.5)
            png = devtools.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        finally:
            devtools.close()
    image = Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB")
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT)  # a screenshot: few colours
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    image.save(out, optimize=True)
    return out


def main(argv=None):
    parser = CommandParser(prog="demo_screenshot.py", description="Screenshot of the nli-zoo demo page with a typed pair.")
    parser.add_argument("models", nargs="+", metavar="RUN_OR_PRESET", help="one or two models, as for nli-zoo demo")
    parser.add_argument("--out", default="docs/images/demo.png", help="the PNG (default docs/images/demo.png)")
    parser.add_argument("--premise", default=PREMISE)
    parser.add_argument("--hypothesis", default=HYPOTHESIS)
    parser.add_argument("--width", type=int, default=1360, help="page width in pixels (default 1360)")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        parser.error("no Chromium found: apt-get install -y chromium")

    from zoo.quiet import import_tensorflow

    import_tensorflow()
    from zoo.demo.app import build_app, launch
    from zoo.demo.models import open_model

    models = [open_model(source) for source in args.models]
    maps = sum(len(m.predictor.explain(args.premise, args.hypothesis).maps) for m in models)
    app = build_app(models)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = launch(app, port=port)
    try:
        out = screenshot(url, args.out, maps, args.width, chromium, args.premise, args.hypothesis)
    finally:
        app.close()
    print(f"[demo_screenshot] wrote {out} ({os.path.getsize(out) // 1024} KB)")


if __name__ == "__main__":
    main()
