"""Headless Chromium for the browser tests, driven over the DevTools protocol on a pipe.

``--remote-debugging-pipe`` makes Chromium read commands on fd 3 and write replies and events on fd 4 (JSON, each
message ended by a NUL byte): no port, no websocket library. Every page gets the Network and Log domains, so a test
sees every request the page makes (``Page.requests``) and every console or security message (a Content-Security-
Policy refusal among them). Each page also lives in its own browser context whose proxy is a local socket that
records any connection it gets (``Page.proxied``): a request that slipped past the page's own events would show
there. Chromium's own background traffic (time, component updates: the flags do not stop all of it) goes to the
browser-wide proxy, another recording socket kept apart (``Browser.background``), so nothing leaves the machine
and the page's record holds only the page's requests.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

NOTHING_SENT = "(connection, nothing sent)"
CHROMIUMS_OWN = {
    f"CONNECT {host}:443 HTTP/1.1" for host in ("www.google.com", "accounts.google.com", "android.clients.google.com")
}
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--no-pings",
    "--metrics-recording-only",
    "--disable-features=AutofillServerCommunication,OptimizationHints,MediaRouter,Translate,"
    "InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater,NetworkTimeServiceQuerying",
    "--remote-debugging-pipe",
]

# Put the two pipe ends on fds 3 and 4 (where Chromium looks for them) and exec Chromium.
_WRAPPER = """\
import fcntl, os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
a, b = fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(w, fcntl.F_DUPFD, 10)
os.dup2(a, 3)
os.dup2(b, 4)
for fd in {a, b, r, w} - {3, 4}:
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


def find_chromium() -> str | None:
    """``$HERMIT_TUI_CHROMIUM``, else the first Chromium or Chrome on the PATH."""
    if os.environ.get("HERMIT_TUI_CHROMIUM"):
        return os.environ["HERMIT_TUI_CHROMIUM"]
    return next((path for name in NAMES if (path := shutil.which(name))), None)


class ProxyRecorder:
    """A local socket standing in for a proxy: records the first line of every connection, answers nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = "(connection, nothing sent)"
                self.seen.append(first or NOTHING_SENT)

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with a fresh profile; ``page()`` opens a tab. Use as a context manager."""

    def __init__(self, *, timeout: float = 30.0) -> None:
        chromium = find_chromium()
        if chromium is None:
            raise RuntimeError("chromium is not installed")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="hermit-tui-chromium-")
        self.background = ProxyRecorder()
        self._recorders = [self.background]
        flags = [*FLAGS, f"--user-data-dir={self.profile}", f"--proxy-server=http://127.0.0.1:{self.background.port}"]
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        self.log = Path(self.profile) / "chromium.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WRAPPER, str(to_chrome_r), str(from_chrome_w), chromium, *flags, "about:blank"],
                pass_fds=(to_chrome_r, from_chrome_w),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self._replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed = True
                    self._cond.notify_all()
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._cond:
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply; raises on a protocol error."""
        with self._cond:
            self._next += 1
            ident = self._next
        msg = {"id": ident, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode("utf-8") + b"\0")
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while ident not in self._replies:
                if self._closed:
                    raise RuntimeError(f"chromium exited: {self.log.read_text(errors='replace')[-2000:]}")
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"no reply to {method} within {self.timeout}s")
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for(self, predicate, timeout: float | None = None, since: int = 0) -> dict:
        """The first event (from index ``since``) for which ``predicate`` is true, waiting for it."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for event in self.events[since:]:
                    if predicate(event):
                        return event
                if self._closed:
                    raise RuntimeError("chromium exited")
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError("the awaited browser event did not come")

    def page(self) -> Page:
        """A new tab in a new browser context, whose proxy records every connection the page makes through it."""
        recorder = ProxyRecorder()
        self._recorders.append(recorder)
        context = self.send("Target.createBrowserContext", {"proxyServer": f"http://127.0.0.1:{recorder.port}"})
        target = self.send(
            "Target.createTarget", {"url": "about:blank", "browserContextId": context["browserContextId"]}
        )["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, recorder)
        for domain in ("Page", "Network", "Log", "Runtime"):
            page.call(f"{domain}.enable")
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        for recorder in self._recorders:
            recorder.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Page:
    """A tab: navigate, evaluate JavaScript, take screenshots; its requests and console messages are recorded."""

    def __init__(self, browser: Browser, session: str, recorder: ProxyRecorder) -> None:
        self.browser, self.session, self.recorder = browser, session, recorder

    @property
    def proxied(self) -> list[str]:
        """The first line of every connection this page's context made to its proxy (loopback goes direct), but for
        Chromium's own traffic: a socket opened ahead of need that sent nothing, and the tunnels Chromium opens by
        itself to its default search engine and account service in every new context (seen with Debian's Chromium
        150: a preconnect to www.google.com, whatever the page). A page's own request to any host, those included,
        still shows in :attr:`requests`."""
        return [line for line in self.recorder.seen if line != NOTHING_SENT and line not in CHROMIUMS_OWN]

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def _mine(self, method: str):
        return [
            e["params"]
            for e in list(self.browser.events)
            if e.get("sessionId") == self.session and e.get("method") == method
        ]

    @property
    def requests(self) -> list[str]:
        """The URL of every request the page made (the document itself included)."""
        return [p["request"]["url"] for p in self._mine("Network.requestWillBeSent")]

    @property
    def websockets(self) -> list[str]:
        return [p["url"] for p in self._mine("Network.webSocketCreated")]

    def websocket_bytes(self) -> bytes:
        """Everything the page's websockets received, binary frames decoded."""
        out = b""
        for p in self._mine("Network.webSocketFrameReceived"):
            frame = p["response"]
            out += (
                base64.b64decode(frame["payloadData"])
                if frame.get("opcode") == 2
                else frame["payloadData"].encode("utf-8")
            )
        return out

    @property
    def messages(self) -> list[dict]:
        """Console and browser log entries (level, source, text), exceptions included."""
        out = [
            {"level": p["entry"]["level"], "source": p["entry"].get("source"), "text": p["entry"]["text"]}
            for p in self._mine("Log.entryAdded")
        ]
        out += [
            {"level": "error", "source": "exception", "text": json.dumps(p["exceptionDetails"])[:2000]}
            for p in self._mine("Runtime.exceptionThrown")
        ]
        return out

    def navigate(self, url: str, timeout: float | None = None) -> None:
        since = len(self.browser.events)
        self.call("Page.navigate", {"url": url})
        self.browser.wait_for(
            lambda e: e.get("sessionId") == self.session and e.get("method") == "Page.loadEventFired", timeout, since
        )

    def evaluate(self, expression: str):
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise RuntimeError(f"javascript error: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 20.0):
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout}s: {expression}")
            time.sleep(0.1)

    def set_view(self, width: int, height: int, dark: bool = False) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.call(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
        )

    def screenshot(self, path: Path, full_page: bool = False, max_height: int = 16000) -> Path:
        params: dict = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1},
            )
        data = base64.b64decode(self.call("Page.captureScreenshot", params)["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path


__all__ = ["Browser", "FLAGS", "Page", "ProxyRecorder", "find_chromium"]
