"""The web console's static files, served by the read API itself under ``/console``.

The console is plain files in ``read_functions/console/`` (HTML, CSS, ES modules and the vendored
chart library), shipped in the wheel and the Lambda zip: it needs no other server and no network
beyond this API, whose documented routes give it every figure it shows. The files carry no
secret and need no key; the page asks the operator or tenant for one and sends it with each API
call.

Each file is read once, with its gzip form and a strong ETag (a digest of its bytes), so a
revalidation costs a 304 without a body; ``Cache-Control: no-cache`` makes browsers revalidate
rather than run yesterday's code after an upgrade. Every answer carries a strict
Content-Security-Policy: scripts, styles and connections from this origin only, nothing inline,
no framing, so a script injected into the page through data (a market name, say) cannot run.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from read_functions.app.messages import Request, Response
from read_functions.app.negotiation import accepts_gzip, etag_matches
from read_functions.app.routing import Audience, Reply, Route
from read_functions.deps import Deps

ASSETS = Path(__file__).parents[1] / "console"
PREFIX = "/console"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8"}  # fmt: skip
_GZIP_WORTH = 512  # smaller files are sent as they are


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    gzipped: bytes | None
    content_type: str
    etag: str


def _load(path: Path) -> Asset:
    body = path.read_bytes()
    content_type = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    gzipped = gzip.compress(body, 9, mtime=0) if len(body) >= _GZIP_WORTH else None
    return Asset(body, gzipped, content_type, f'"{hashlib.sha256(body).hexdigest()[:20]}"')


@cache
def assets() -> dict[str, Asset]:
    """URL path -> asset, for every file of the console folder (``/console`` is its index.html)."""
    found = {f"{PREFIX}/{p.relative_to(ASSETS).as_posix()}": _load(p) for p in sorted(ASSETS.rglob("*"))
             if p.is_file()}  # fmt: skip
    found[PREFIX] = found[f"{PREFIX}/index.html"]
    return found


async def serve(request: Request, deps: Deps) -> Response:
    """One console file: 304 when the caller has it, gzip when it accepts it."""
    asset = assets()[request.raw_path]
    headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Vary": "Accept-Encoding"}
    if etag_matches(request.headers.get("if-none-match") or "", asset.etag):
        return Response(304, b"", None, headers)
    if asset.gzipped is not None and accepts_gzip(request.headers.get("accept-encoding") or ""):
        headers["Content-Encoding"] = "gzip"
        return Response(200, asset.gzipped, asset.content_type, headers)
    return Response(200, asset.body, asset.content_type, headers)


def routes() -> tuple[Route[Deps], ...]:
    """One static route per file, so the router finds each with one dict look-up."""
    return tuple(
        Route(
            "GET",
            path,
            serve,
            Audience.PUBLIC,
            "The web console" if path == PREFIX else f"Console file {path.removeprefix(PREFIX + '/')}",
            "console",
            replies={
                200: Reply(
                    "The file.", {"type": "string"}, asset.content_type.partition(";")[0], headers=("ETag",)
                ),
                304: Reply("Not modified since the ETag sent in If-None-Match.", None),
            },
            operation_id="console" if path == PREFIX else "",
        )
        for path, asset in sorted(assets().items())
    )
