"""``hermit-tui serve`` without a browser (tests/test_browser.py loads its page in Chromium): the session command,
the loopback rule, one-line errors, the page it serves, and a clean stop."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hermit_tui.cli import serve as cli_serve

textual_serve = pytest.importorskip("textual_serve", reason="the web extra is not installed (pip install -e '.[web]')")


def status_of(refusal: tuple[int, str] | None) -> int:
    """The HTTP status of a refusal the test expects."""
    assert refusal is not None
    return refusal[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(config: Path, port: int, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hermit_tui", "serve", "--config", str(config), "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def started_url(proc: subprocess.Popen, timeout: float = 30) -> str:
    """The address ``serve`` printed (the page, with its token), once it is listening."""
    import select

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.startswith("hermit-tui: serving the dashboard at "):
                return line.split(" at ", 1)[1].strip()
            if not line and proc.poll() is not None:
                break
    assert proc.stderr is not None
    raise AssertionError(f"serve printed no address (exit {proc.poll()}): {proc.stderr.read() if proc.poll() else ''}")


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                assert response.status == 200
                return response.read().decode("utf-8")
        except OSError:
            if proc.poll() is not None:
                assert proc.stderr is not None
                raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def processes_mentioning(text: str) -> list[int]:
    """Processes whose command line mentions ``text`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def test_the_session_command_is_this_python_with_the_config_and_overrides_quoted(tmp_path):
    config = tmp_path / "a folder; with $pace" / "run.yaml"
    overrides = ["agent.params.note=it's $(rm -rf ~) `x` & y", "agent.concurrency=2"]
    argv = shlex.split(cli_serve.session_command(config, overrides))
    assert argv == [
        sys.executable,
        "-m",
        "hermit_tui",
        "--config",
        str(config),
        "--set",
        overrides[0],
        "--set",
        overrides[1],
    ]


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(host, loopback):
    assert cli_serve.is_loopback(host) is loopback


def test_the_served_page_asks_no_third_party_and_names_the_run():
    original = (Path(textual_serve.__file__).parent / "templates" / "app_index.html").read_text()
    assert "fonts.googleapis.com" in original  # what this guards against: textual-serve's page fetches a web font
    page = cli_serve.patched_template(original)
    assert (
        "googleapis" not in page
        and "https://" not in page
        and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    )
    assert "<title>{{ application.name|e }}</title>" in page
    # the start card says what to do (issue 27, finding 11): right under the name, once
    name = "<div>{{ application.name or 'Textual Application' }}</div>"
    assert name in original and page.count("click it once so that it takes the keys") == 1
    assert page.index("click it once") > page.index(name)
    fonts = Path(textual_serve.__file__).parent / "static" / "fonts"
    for name in ("RobotoMono-VariableFont_wght.ttf", "RobotoMono-Italic-VariableFont_wght.ttf"):
        assert f"fonts/{name}" in page and (fonts / name).is_file()


def run_cli(*argv: str, extra_code: str = "") -> subprocess.CompletedProcess:
    code = extra_code + f"from hermit_tui.cli import main; raise SystemExit(main({list(argv)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_without_the_web_extra_one_line_and_exit_2(demo_config):
    done = run_cli(
        "serve", "--config", str(demo_config), extra_code="import sys; sys.modules['textual_serve'] = None\n"
    )  # as if not installed
    assert done.returncode == 2
    assert done.stderr == ("hermit-tui: error: `hermit-tui serve` needs the web extra: pip install 'hermit-tui[web]'\n")


def test_bad_input_is_one_line_and_exit_2(demo_config, tmp_path):
    cases = [
        (["--config", str(tmp_path / "missing.yaml")], "config file not found"),
        (["--config", str(demo_config), "--port", "70000"], "--port must be between 1 and 65535"),
        (["--config", str(demo_config), "--public-url", "ftp://x"], "--public-url must start with http"),
        (["--config", str(demo_config), "not-an-override"], "not-an-override"),
    ]
    for argv, message in cases:
        done = run_cli("serve", *argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_a_busy_port_and_another_host(demo_config):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--config", str(demo_config), "--port", str(port))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"hermit-tui: error: 127.0.0.1:{port}: cannot listen (")
    # an address of another host (TEST-NET-1, never this machine's): the warning, then the bind fails
    other = free_port()
    done = run_cli("serve", "--config", str(demo_config), "--host", "192.0.2.1", "--port", str(other))
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 2
    assert lines[0] == (
        "hermit-tui: warning: serving on 192.0.2.1: whoever can reach it and has the address with its token can "
        "drive the dashboard (launch evaluations, publish cards); sessions only from http://192.0.2.1:" + str(other)
    )
    assert lines[1].startswith("hermit-tui: error: 192.0.2.1:")


def test_serve_answers_on_loopback_and_stops_cleanly(demo_config):
    port = free_port()
    proc = serve(demo_config, port)
    try:
        url = started_url(proc)
        token = url.split("?token=", 1)[1]
        assert url == f"http://127.0.0.1:{port}/?token={token}" and len(token) >= 43
        page = wait_http(url, proc)
        assert "<title>hermit-tui · demo</title>" in page
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws/{token}"' in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/fonts/RobotoMono-VariableFont_wght.ttf") as r:
            assert r.status == 200 and len(r.read()) > 10_000
        with socket.socket() as s:  # bound to loopback only: another local address of this host is refused
            addresses = {str(a[4][0]) for a in socket.getaddrinfo(socket.gethostname(), port, socket.AF_INET)}
            others = [a for a in addresses if not a.startswith("127.")]
            if others:
                assert s.connect_ex((others[0], port)) != 0
    finally:
        code = stop(proc)
    assert proc.stderr is not None
    assert code == 0, proc.stderr.read()
    assert "hermit-tui: warning" not in proc.stderr.read()


# -- a session only from this server's own origin and host (issue 29) -------------------------------------------------
def test_the_access_rule_of_each_way_of_serving():
    local = cli_serve.access_for("127.0.0.1", 8000, None, token="t" * 43)
    assert local.hosts == {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"}
    assert local.origins == {"http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"}
    assert local.url == "http://127.0.0.1:8000/?token=" + "t" * 43
    assert local.refusal("/", "127.0.0.1:8000", None, "t" * 43) is None
    assert status_of(local.refusal("/", "127.0.0.1:8000", None, "t" * 42)) == 403
    assert status_of(local.refusal("/", "evil.example:8000", None, "t" * 43)) == 421  # DNS rebinding
    assert status_of(local.refusal("/ws/x", "127.0.0.1:8000", "http://evil.example", "t" * 43)) == 403
    # a websocket always has an Origin
    assert status_of(local.refusal("/ws/x", "127.0.0.1:8000", None, "t" * 43)) == 403
    assert local.refusal("/static/js/textual.js", "localhost:8000", None, None) is None
    public = cli_serve.access_for("0.0.0.0", 8000, "https://dash.example.org/", token="t" * 43)
    assert public.hosts == {"dash.example.org"} and public.origins == {"https://dash.example.org"}
    assert public.url == "https://dash.example.org/?token=" + "t" * 43
    # http ≠ https
    assert status_of(public.refusal("/ws/t", "dash.example.org", "http://dash.example.org", "t" * 43)) == 403
    tunnel = cli_serve.access_for("127.0.0.1", 8000, "http://localhost:9000", token="t" * 43)
    assert "localhost:9000" in tunnel.hosts and "127.0.0.1:8000" in tunnel.hosts
    with pytest.raises(cli_serve.InputError, match="--public-url"):
        cli_serve.access_for("0.0.0.0", 8000, None)
    with pytest.raises(cli_serve.InputError, match="--public-url"):
        cli_serve.access_for("::", 8000, None)
    tokens = {cli_serve.access_for("127.0.0.1", 8000, None).token for _ in range(20)}
    assert len(tokens) == 20 and all(len(t) >= 43 for t in tokens)  # 32 random bytes each


def test_every_address_needs_a_public_url(demo_config):
    done = run_cli("serve", "--config", str(demo_config), "--host", "0.0.0.0", "--port", str(free_port()))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--public-url URL" in done.stderr


def http_status(url: str, headers: dict | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def _websocket(url: str, origin: str | None) -> tuple[str, bytes]:
    """Open a websocket as a page of ``origin`` would, send the keystroke ``l`` (launch) once it is open; what came
    back: "refused <status>" or "session" and the bytes received."""
    import asyncio

    import aiohttp

    headers = {"Origin": origin} if origin else {}
    received = b""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url + "?width=100&height=30", headers=headers) as ws:
                await ws.send_json(["stdin", "l"])
                deadline = asyncio.get_running_loop().time() + 30
                while b"hermit-tui" not in received and asyncio.get_running_loop().time() < deadline:
                    msg = await ws.receive(timeout=30)
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        received += msg.data
                    elif msg.type != aiohttp.WSMsgType.TEXT:
                        break
                return "session", received
        except aiohttp.WSServerHandshakeError as exc:
            return f"refused {exc.status}", received


def test_a_running_server_gives_sessions_only_to_its_own_origin_with_the_token(demo_config):
    import asyncio

    port = free_port()
    proc = serve(demo_config, port)
    try:
        url = started_url(proc)
        token = url.split("?token=", 1)[1]
        base = f"http://127.0.0.1:{port}"
        wait_http(url, proc)
        assert http_status(f"{base}/") == 403
        assert http_status(f"{base}/?token=" + "x" * len(token)) == 403
        assert http_status(f"{base}/?token={token}") == 200
        assert http_status(f"http://localhost:{port}/?token={token}") == 200
        assert http_status(f"{base}/?token={token}", {"Host": f"evil.example:{port}"}) == 421  # DNS rebinding
        assert http_status(f"{base}/?token={token}", {"Host": "evil.example"}) == 421
        assert http_status(f"{base}/?token={token}", {"Origin": "http://evil.example"}) == 403
        assert http_status(f"{base}/static/js/textual.js") == 200
        assert http_status(f"{base}/static/js/textual.js", {"Host": "evil.example"}) == 421
        ws = f"ws://127.0.0.1:{port}/ws"
        cases = {
            "foreign origin": (f"{ws}/{token}", "http://evil.example"),
            "foreign port": (f"{ws}/{token}", "http://127.0.0.1:1"),
            "no origin": (f"{ws}/{token}", None),
            "wrong token": (f"{ws}/{'x' * len(token)}", base),
            "no token": (ws, base),
        }
        for what, (address, origin) in cases.items():
            outcome, received = asyncio.run(_websocket(address, origin))
            assert outcome in ("refused 403", "refused 404"), what
            assert received == b""
        assert processes_mentioning(f"hermit_tui --config {demo_config}") == []  # no session was started
        outcome, received = asyncio.run(_websocket(f"{ws}/{token}", base))
        assert outcome == "session" and b"hermit-tui" in received
    finally:
        code = stop(proc)
    assert code == 0
