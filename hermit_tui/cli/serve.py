"""``hermit-tui serve``: the dashboard in a browser, through textual-serve (the optional ``web`` extra).

    hermit-tui serve --config run.yaml [--host 127.0.0.1] [--port 8000] [--public-url URL] [key.sub=value ...]

Every browser session runs the dashboard in its own process, ``python -m hermit_tui --config run.yaml [--set
key.sub=value ...]`` with this Python. Whoever holds a session drives the dashboard (launches evaluations, publishes
cards), so a session is given only to a request of this server's own origin, as Jupyter does:

- bound to loopback by default; ``--host 0.0.0.0`` (every address) needs ``--public-url URL``, the address browsers
  use, whose origin is then the only one accepted;
- every request's ``Host`` must name this server (a DNS-rebinding name is refused with 421), and a request carrying
  an ``Origin`` (the websocket always does, and must) must come from this server's origin (403 otherwise);
- the page and the websocket need the unguessable token (``secrets.token_urlsafe(32)``, new at every start) that the
  printed address holds: ``/?token=…`` for the page, ``/ws/<token>`` for the websocket it opens (compared in constant
  time; 403 otherwise). textual-serve's static files (its script, styles, fonts) need no token.

The page textual-serve ships asks Google's font service for its terminal font; hermit-tui serves it a copy of that
page that loads the same font from textual-serve's own files instead, and names the run in the page's title, so a
served dashboard makes no request beyond the server it came from.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple

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
_CARD_NAME = re.compile(r"<div>\{\{ application\.name or 'Textual Application' \}\}</div>")
_CARD_HINT = (
    '\n        <div style="font-size: 0.8em; opacity: 0.8; max-width: 32em; text-align: center">'
    "The dashboard starts here (press Start if it is offered); then click it once so that it takes the keys.</div>"
)


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
        help=f"the address to listen on (default {DEFAULT_HOST}: this machine only; 0.0.0.0 or :: needs "
        "--public-url). Sessions go only to this server's own origin, with the token of the printed address",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the address browsers use when it is not http://HOST:PORT (behind a reverse proxy or an SSH "
        "tunnel; required with --host 0.0.0.0): its origin is the only one given a session",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def is_wildcard(host: str) -> bool:
    """Whether ``host`` listens on every address of the machine (``0.0.0.0``, ``::``)."""
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _authority(host: str, port: int, default_port: int = 80) -> str:
    """``host:port`` as a browser writes it in ``Host`` (IPv6 in brackets, the scheme's default port left out)."""
    host = host.lower().strip("[]")
    if ":" in host:
        host = f"[{host}]"
    return host if port == default_port else f"{host}:{port}"


class Access(NamedTuple):
    """Who may have a session: the ``Host`` values and origins of this server, and the token of this start (an
    immutable NamedTuple, not a dataclass: ``--help`` skips the dataclasses module's import)."""

    token: str
    hosts: frozenset[str]
    origins: frozenset[str]
    base_url: str  # the address browsers use, without the token

    @property
    def url(self) -> str:
        """The address to open: the page, with the token."""
        return f"{self.base_url}/?token={self.token}"

    def refusal(self, path: str, host: str | None, origin: str | None, token: str | None) -> tuple[int, str] | None:
        """Why a request is refused (an HTTP status and one line), or None to serve it. ``token`` is the one the
        request carries (the page's ``?token=``, the websocket's path), None for the static files."""
        import hmac

        if (host or "").lower() not in self.hosts:
            return 421, f"hermit-tui serve: this server answers only to {', '.join(sorted(self.hosts))}"
        if origin is not None and origin.lower() not in self.origins:
            return 403, "hermit-tui serve: a page of another origin cannot open a session"
        if path.startswith("/ws"):
            if origin is None:
                return 403, "hermit-tui serve: a websocket without an Origin is refused"
        elif path != "/":
            return None  # textual-serve's static files and downloads (their keys are random) need no token
        if token is None or not hmac.compare_digest(token.encode("utf-8"), self.token.encode("utf-8")):
            return 403, "hermit-tui serve: open the address hermit-tui serve printed (it holds the session token)"
        return None


def access_for(host: str, port: int, public_url: str | None, token: str | None = None) -> Access:
    """The access rule of a server listening on ``host:port``, used at ``public_url`` (None: ``http://host:port``).
    InputError for a wildcard host without ``public_url``."""
    import secrets
    from urllib.parse import urlsplit

    names: set[tuple[str, str]] = set()  # (scheme, authority)
    if public_url is not None:
        parts = urlsplit(public_url)
        default = 443 if parts.scheme == "https" else 80
        names.add((parts.scheme, _authority(parts.hostname or "", parts.port or default, default)))
        base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    elif is_wildcard(host):
        raise InputError(
            f"--host {host} listens on every address: give --public-url URL, the address browsers will use "
            "(its origin is the only one given a session)"
        )
    else:
        base = f"http://{_authority(host, port)}"
    if is_loopback(host) or public_url is None:
        for name in (host, *(("127.0.0.1", "localhost", "::1") if is_loopback(host) else ())):
            names.add(("http", _authority(name, port)))
    return Access(
        token=token or secrets.token_urlsafe(32),
        hosts=frozenset(authority for _, authority in names),
        origins=frozenset(f"{scheme}://{authority}" for scheme, authority in names),
        base_url=base,
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def session_command(config_path: Path, overrides: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, the dashboard, the config and
    the overrides, each quoted."""
    import shlex

    argv = [sys.executable, "-m", "hermit_tui", "--config", str(config_path)]
    for override in overrides:
        argv += ["--set", override]
    return shlex.join(argv)


def patched_template(original: str) -> str:
    """textual-serve's page with the web font replaced by textual-serve's own copy, a ``<title>`` added, and a line
    under the name on its start card saying what to do (the card alone gave no hint that the dashboard must be
    clicked, or Start pressed, to take the keys)."""
    text = _WEB_FONT.sub(_LOCAL_FONT, original)
    text = _CARD_NAME.sub(lambda m: m.group(0) + _CARD_HINT, text, count=1)
    if "<title" not in text.lower():
        text = re.sub(r"<head>", "<head>\n    " + _TITLE, text, count=1, flags=re.IGNORECASE)
    return text


_HEADERS = {
    "Referrer-Policy": "no-referrer",  # the token never leaves in a Referer
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",  # no other page frames a session
    "Cache-Control": "no-store",
}


def guarded_server(command: str, access: Access, **options):
    """textual-serve's server, giving a session only to what ``access`` allows (see the module's docstring), and
    printing the address with its token at start."""
    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server, to_int

    class GuardedServer(Server):
        async def _make_app(self) -> web.Application:
            """textual-serve's application, with the websocket under ``/ws/<token>`` and the guard in front."""
            import jinja2

            app = web.Application(middlewares=[self._guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get("/", self.handle_index, name="index"),
                    web.get("/ws/{token}", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),
                    web.static("/static", self.statics_path, name="static"),
                ]
            )
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

        @web.middleware
        async def _guard(self, request: web.Request, handler):
            token = request.query.get("token") if request.path == "/" else request.match_info.get("token")
            refused = access.refusal(request.path, request.host, request.headers.get("Origin"), token)
            if refused is not None:
                return web.Response(status=refused[0], text=refused[1] + "\n", headers=_HEADERS)
            response = await handler(request)
            if not response.prepared:
                response.headers.update(_HEADERS)
            return response

        async def handle_index(self, request: web.Request) -> web.Response:
            context = {
                "font_size": to_int(request.query.get("fontsize", "16"), 16),
                "app_websocket_url": _websocket_url(access, self.public_url),
                "config": {"static": {"url": f"{self.public_url}/static/"}},
                "application": {"name": self.title},
            }
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        async def on_startup(self, app: web.Application) -> None:
            import logging

            logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # its lines would carry the token
            sys.stdout.write(
                f"hermit-tui: serving the dashboard at {access.url}\n"
                "  (the address holds this start's token: whoever has it can drive the dashboard; Ctrl+C stops)\n"
            )
            sys.stdout.flush()

    server = GuardedServer(command, **options)
    server.public_url = access.base_url
    return server


def _websocket_url(access: Access, public_url: str) -> str:
    scheme, rest = public_url.split(":", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}:{rest}/ws/{access.token}"


def _check(args) -> None:
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be between 1 and 65535, got {args.port}")
    if not args.host or any(c.isspace() for c in args.host):
        raise InputError(f"--host: not an address: {args.host!r}")
    if args.public_url is not None and not re.match(r"https?://[^\s/]+", args.public_url):
        raise InputError(f"--public-url must start with http:// or https:// and name a host, got {args.public_url!r}")


def run(args) -> int:
    """Serve the dashboard until interrupted; 0 when stopped."""
    import shutil
    import tempfile
    from importlib.util import find_spec

    from hermit_tui.core.workspace.config import load_config

    _check(args)
    if find_spec("textual_serve") is None:
        raise InputError(EXTRA_MISSING)
    config_path = Path(args.config).expanduser().resolve()
    config = load_config(config_path, args.overrides or [])  # a bad config is one line here, not in each session
    import textual_serve

    access = access_for(args.host, args.port, args.public_url)
    if not is_loopback(args.host):
        sys.stderr.write(
            f"hermit-tui: warning: serving on {args.host}: whoever can reach it and has the address with its "
            f"token can drive the dashboard (launch evaluations, publish cards); sessions only from "
            f"{', '.join(sorted(access.origins))}\n"
        )
    templates = Path(tempfile.mkdtemp(prefix="hermit-tui-serve-"))
    try:
        original = Path(textual_serve.__file__).resolve().parent / "templates"
        for page in original.glob("*.html"):
            text = page.read_text(encoding="utf-8")
            (templates / page.name).write_text(
                patched_template(text) if page.name == "app_index.html" else text, encoding="utf-8"
            )
        server = guarded_server(
            session_command(config_path, args.overrides or []),
            access,
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
    "Access",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "EXTRA_MISSING",
    "access_for",
    "add_parser",
    "guarded_server",
    "is_loopback",
    "is_wildcard",
    "patched_template",
    "run",
    "session_command",
]
