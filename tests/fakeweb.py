"""A tiny web server on 127.0.0.1 for fetch and search tests: routes map a path to a status,
headers and a body (bytes, or an iterator of byte chunks for streamed and slow responses). It
records every request, so a test can assert what was (and was not) asked for. Stopped by the
fixture that started it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

Body = bytes | Callable[[], Iterable[bytes]]


@dataclass
class Route:
    body: Body = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html"})
    delay_s: float = 0.0  # before the status line: a slow server


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that hang up mid-body are the point of several tests


class FakeWeb:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        # Paths whose answer depends on the request (a fake search API reading `q`).
        self.handlers: dict[str, Callable[[Seen], Route]] = {}
        self.seen: list[Seen] = []
        self.bytes_sent: dict[str, int] = {}
        self._lock = threading.Lock()
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                parts = parts._replace(path=unquote(parts.path))
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with web._lock:
                    web.seen.append(
                        Seen(
                            self.command,
                            parts.path,
                            parse_qs(parts.query),
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                handler = web.handlers.get(parts.path)
                route = handler(web.seen[-1]) if handler else web.routes.get(parts.path)
                if route is None:
                    route = Route(b"not found", 404, {"Content-Type": "text/plain"})
                if route.delay_s:
                    time.sleep(route.delay_s)
                sent = 0
                try:
                    self.send_response(route.status)
                    for k, v in route.headers.items():
                        self.send_header(k, v)
                    if isinstance(route.body, bytes):
                        if "Content-Length" not in route.headers:
                            self.send_header("Content-Length", str(len(route.body)))
                        self.end_headers()
                        self.wfile.write(route.body)
                        sent = len(route.body)
                    else:
                        self.send_header("Connection", "close")
                        self.end_headers()
                        self.close_connection = True
                        for chunk in route.body():
                            self.wfile.write(chunk)
                            sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with web._lock:
                        web.bytes_sent[parts.path] = web.bytes_sent.get(parts.path, 0) + sent

            do_GET = _serve
            do_POST = _serve

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FakeWeb:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def route(
        self,
        path: str,
        body: Body = b"",
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        h = {} if content_type is None else {"Content-Type": content_type}
        h.update(headers or {})
        self.routes[path] = Route(body, status, h, delay_s)

    def requests_to(self, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path == path]


def page(title: str, *paragraphs: str, head: str = "") -> bytes:
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head}"
        f"</head><body><article><h1>{title}</h1>{body}</article></body></html>"
    ).encode()


def repeat(chunk: bytes, total: int) -> Callable[[], Iterator[bytes]]:
    def gen() -> Iterator[bytes]:
        left = total
        while left > 0:
            piece = chunk[: min(len(chunk), left)]
            left -= len(piece)
            yield piece

    return gen


def searxng_results(query: str, urls: list[str]) -> bytes:
    """A SearXNG JSON answer listing `urls` in order, as its `format=json` endpoint gives it."""
    body = {
        "query": query,
        "number_of_results": 0,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
        "results": [
            {
                "url": u,
                "title": f"Result {i}",
                "content": "snippet",
                "engine": "duckduckgo",
                "engines": ["duckduckgo"],
                "positions": [i + 1],
                "score": 1.0 / (i + 1),
                "category": "general",
                "template": "default.html",
            }
            for i, u in enumerate(urls)
        ],
    }
    return json.dumps(body).encode()
