"""Look at the built site as a reader would: every internal link and anchor resolves, and every
page loads in headless Chromium with no console error; optionally, screenshots.

    python docs/check_site.py [--site site] [--shots DIR] [--chromium PATH]

Run after `make docs` (`make docs-check` does both). The site is served from 127.0.0.1 by this
process. Links are checked in the HTML files themselves (href and src of every page, each
fragment against the ids of its target page); the browser check loads each page in one headless
Chromium driven over the DevTools protocol and fails on an uncaught exception, a console error,
a failed request or an HTTP error. Without Chromium it says so and checks the links only.
Standard library only, so any Python runs it.
"""

from __future__ import annotations

import argparse
import base64
import functools
import html.parser
import http.server
import itertools
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

# Screenshots (--shots): the home page, one family page, one API page.
SHOTS = {
    "home.png": "index.html",
    "family-tau.png": "envs/tau.html",
    "api-core.png": "api/core.html",
}


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) is not None:
                self.refs.append(attrs[key])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(site: Path) -> list[str]:
    """Every internal href/src of every page that names no file, or an id its page lacks."""
    pages = {path: _parse(path) for path in sorted(site.rglob("*.html"))}
    problems = []
    for path, page in pages.items():
        for ref in page.refs:
            if urlsplit(ref).scheme or ref.startswith(("//", "mailto:", "data:")):
                continue
            target_ref, fragment = urldefrag(ref)
            if not target_ref:
                target = path
            elif target_ref.startswith("/"):  # from the site's root, where it is served
                target = (site / unquote(target_ref).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(target_ref)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {ref}"
            if not target.is_file():
                problems.append(f"{where}: no such file")
            elif fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(fragment) not in ids:
                    problems.append(f"{where}: no id {fragment!r} in {target.relative_to(site)}")
    return problems


@functools.lru_cache
def _serve(site: Path) -> str:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages ended by a NUL byte, fd 3 into the browser, fd 4 out), one page for all."""

    def __init__(self, chromium: str, profile: str) -> None:
        to_browser, self._in = os.pipe()
        self._out, from_browser = os.pipe()
        devnull = os.open(os.devnull, os.O_WRONLY)
        argv = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe",
            f"--user-data-dir={profile}", "about:blank",
        ]  # fmt: skip
        self.pid = os.posix_spawn(
            chromium,
            argv,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, to_browser, 3),
                (os.POSIX_SPAWN_DUP2, from_browser, 4),
                (os.POSIX_SPAWN_DUP2, devnull, 1),
                (os.POSIX_SPAWN_DUP2, devnull, 2),
            ],
        )
        for fd in (to_browser, from_browser, devnull):
            os.close(fd)
        self._messages: queue.Queue = queue.Queue()
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=self.session)
        self.events: list[dict] = []

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._out, 1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for message in messages:
                self._messages.put(json.loads(message))
        self._messages.put(None)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its answer; events that come first are kept."""
        number = next(self._ids)
        message = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._messages.get(timeout=60)
            if answer is None:
                raise RuntimeError(f"chromium exited while answering {method}")
            if answer.get("id") == number:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            if "method" in answer:
                getattr(self, "events", []).append(answer)

    def open(self, url: str, settle_s: float = 0.5) -> list[dict]:
        """Load ``url`` and return the events it caused (until load, then ``settle_s`` more)."""
        self.events = []
        self.call("Page.navigate", {"url": url}, self.session)
        deadline = time.monotonic() + 30
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                self.events.append({"method": "timeout", "params": {}})
                break
            self._drain(0.05)
        self._drain(settle_s)
        return self.events

    def _drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                message = self._messages.get(timeout=left)
            except queue.Empty:
                return
            if message is not None and "method" in message:
                self.events.append(message)

    def screenshot(self, url: str, out: Path, width: int = 1280, height: int = 1000) -> None:
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics, self.session)
        self.open(url)
        shot = self.call("Page.captureScreenshot", {"format": "png"}, self.session)
        out.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, queue.Empty, OSError):
            os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        os.close(self._in)


def _errors(events: list[dict]) -> list[str]:
    """What a reader's console would show as an error, from one page's events."""
    found = []
    for event in events:
        method, params = event["method"], event["params"]
        if method == "timeout":
            found.append("the page did not finish loading in 30 s")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            found.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            found.append(f"console error: {entry['text']} ({entry.get('url', '')})")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"request failed: {params['errorText']}")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            response = params["response"]
            found.append(f"HTTP {response['status']}: {response['url']}")
    return found


def browse(site: Path, chromium: str, shots: Path | None) -> tuple[list[str], int, list[Path]]:
    """(problems, pages loaded, screenshots): every page of ``site`` loaded in Chromium."""
    base = _serve(site)
    problems, loaded, made = [], 0, []
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(chromium, profile)
        try:
            for path in sorted(site.rglob("*.html")):
                name = path.relative_to(site).as_posix()
                events = browser.open(base + name)
                errors = _errors(events)
                loaded += not any(e["method"] == "timeout" for e in events)
                problems += [f"{name}: {error}" for error in errors]
            if shots:
                shots.mkdir(parents=True, exist_ok=True)
                for file, page in SHOTS.items():
                    browser.screenshot(base + page, shots / file)
                    made.append(shots / file)
        finally:
            browser.close()
    return problems, loaded, made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("site"))
    parser.add_argument("--shots", type=Path, help="write screenshots of three pages here")
    parser.add_argument("--chromium", help="the browser (default: chromium on PATH)")
    args = parser.parse_args()
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        print(f"check_site: no built site in {site}: run `make docs` first", file=sys.stderr)
        return 2
    problems = broken_links(site)
    pages = len(list(site.rglob("*.html")))
    print(f"check_site: links and anchors of {pages} pages: {len(problems)} broken")
    chromium = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("check_site: browser check skipped: no chromium (apt-get install chromium)")
    else:
        errors, loaded, made = browse(site, chromium, args.shots)
        print(f"check_site: {loaded} of {pages} pages loaded in {chromium}, "
              f"{len(errors)} console errors")  # fmt: skip
        problems += errors
        for shot in made:
            print(f"check_site: screenshot {shot}")
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
