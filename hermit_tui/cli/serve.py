"""``hermit-tui serve``: the dashboard in a browser, through textual-serve (the optional ``web`` extra).

    hermit-tui serve --config run.yaml [--host 127.0.0.1] [--port 8000] [--public-url URL] [key.sub=value ...]

Every browser session runs the dashboard in its own process, ``python -m hermit_tui --config run.yaml [--set
key.sub=value ...]`` with this Python. Bound to loopback by default: whoever can reach the address drives the
dashboard (launches evaluations, publishes cards) and there is no login, so another host gets a warning.

The page textual-serve ships asks Google's font service for its terminal font; hermit-tui serves it a copy of that
page that loads the same font from textual-serve's own files instead, and names the run in the page's title, so a
served dashboard makes no request beyond the server it came from.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from hermit_tui.core.errors import InputError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
EXTRA_MISSING = "`hermit-tui serve` needs the web extra: pip install 'hermit-tui[web]'"
_WEB_FONT = re.compile(r"<link\b[^>]*fonts\.googleapis\.com[^>]*>", re.IGNORECASE | re.DOTALL)
_LOCAL_FONT = (
    '<style>@font-face{font-family:"Roboto Mono";font-style:normal;'
    'src:url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype")}'
    '@font-face{font-family:"Roboto Mono";font-style:italic;'
    'src:url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype")}'
    "</style>"
)
_TITLE = "<title>{{ application.name|e }}</title>"


def add_parser(subparsers):
    """Add the ``serve`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "serve",
        help="the dashboard in a browser, one process per session (needs "
        "pip install 'hermit-tui[web]'); loopback only by default",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml, opened in every session")
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"the address to listen on (default {DEFAULT_HOST}: this machine only; anyone who can reach "
        "another address can drive the dashboard, and there is no login)",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the address browsers use when it is not http://HOST:PORT "
        "(behind a reverse proxy or an SSH tunnel, or with --host 0.0.0.0)",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def session_command(config_path: Path, overrides: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, the dashboard, the config and
    the overrides, each quoted."""
    argv = [sys.executable, "-m", "hermit_tui", "--config", str(config_path)]
    for override in overrides:
        argv += ["--set", override]
    return shlex.join(argv)


def patched_template(original: str) -> str:
    """textual-serve's page with the web font replaced by textual-serve's own copy and a ``<title>`` added."""
    text = _WEB_FONT.sub(_LOCAL_FONT, original)
    if "<title" not in text.lower():
        text = re.sub(r"<head>", "<head>\n    " + _TITLE, text, count=1, flags=re.IGNORECASE)
    return text


def _check(args) -> None:
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be between 1 and 65535, got {args.port}")
    if not args.host or any(c.isspace() for c in args.host):
        raise InputError(f"--host: not an address: {args.host!r}")
    if args.public_url is not None and not re.match(r"https?://[^\s/]+", args.public_url):
        raise InputError(f"--public-url must start with http:// or https:// and name a host, got {args.public_url!r}")


def run(args) -> int:
    """Serve the dashboard until interrupted; 0 when stopped."""
    from importlib.util import find_spec

    from hermit_tui.core.workspace.config import load_config

    _check(args)
    if find_spec("textual_serve") is None:
        raise InputError(EXTRA_MISSING)
    config_path = Path(args.config).expanduser().resolve()
    config = load_config(config_path, args.overrides or [])  # a bad config is one line here, not in each session
    import textual_serve
    from textual_serve.server import Server

    if not is_loopback(args.host):
        sys.stderr.write(
            f"hermit-tui: warning: serving on {args.host}: anyone who can reach this address can drive "
            "the dashboard (launch evaluations, publish cards); there is no login\n"
        )
    templates = Path(tempfile.mkdtemp(prefix="hermit-tui-serve-"))
    try:
        original = Path(textual_serve.__file__).resolve().parent / "templates"
        for page in original.glob("*.html"):
            text = page.read_text(encoding="utf-8")
            (templates / page.name).write_text(
                patched_template(text) if page.name == "app_index.html" else text, encoding="utf-8"
            )
        server = Server(
            session_command(config_path, args.overrides or []),
            host=args.host,
            port=args.port,
            title=f"hermit-tui · {config.run_name}",
            public_url=args.public_url,
            templates_path=templates,
        )
        try:
            server.serve()
        except OSError as exc:
            raise InputError(f"{args.host}:{args.port}: cannot listen ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(templates, ignore_errors=True)
    return 0


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "EXTRA_MISSING",
    "add_parser",
    "is_loopback",
    "patched_template",
    "run",
    "session_command",
]
