"""A small model server on 127.0.0.1 for tests: the Anthropic Messages API (POST /v1/messages)
and the OpenAI chat-completions API (POST .../chat/completions), answering from a script or
from a simulated model that reads mole's prompts and answers them plausibly.

The real `anthropic` SDK and the real httpx client talk to it over a socket, so what is tested
is the actual request and response handling, not a stand-in. Every request is kept (headers
and body) for assertions. Use it as a context manager: the server stops when the block ends."""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.prompts import MINE_SYSTEM
from mole_dag.output.prompts import WRITE_SYSTEM
from mole_dag.planner.extractive import plan_questions, topic_of
from mole_dag.planner.prompts import PLAN_SYSTEM
from mole_dag.skills.protocol import MineRequest
from mole_dag.verifier.extractive import judge_pair
from mole_dag.verifier.prompts import GROUND_SYSTEM, JUDGE_SYSTEM


def _frame_of(rationale: str) -> dict[str, object]:
    """Subject, attribute and values from the extractive judge's rationale."""
    subject = re.search(r"subject: ([^;]+)", rationale)
    attribute = re.search(r"attribute: ([^;]+)", rationale)
    values = (
        re.search(r"different figures \((.+?) vs (.+?)\)", rationale)
        or re.search(r"values: '(.+?)' vs '(.+?)'", rationale)
        or re.search(r"opposite directions \((\S+) / (\S+)\)", rationale)
    )
    return {
        "subject": subject.group(1) if subject else "",
        "attribute": attribute.group(1) if attribute else "",
        "values": [values.group(1), values.group(2)] if values else [],
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    # Requests the server was handling when this one arrived, this one included.
    in_flight: int = 1
    # The answer given, once given (replies are listed in completion order, requests in
    # arrival order: with concurrent calls the two lists do not line up).
    reply: Reply | None = None

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")

    @property
    def system(self) -> str:
        """The system prompt, in either API's shape."""
        data = self.json
        if "system" in data:
            s = data["system"]
            return s if isinstance(s, str) else "".join(b.get("text", "") for b in s)
        for m in data.get("messages", []):
            if m.get("role") == "system":
                return m.get("content", "")
        return ""

    @property
    def user(self) -> str:
        return "\n".join(
            m.get("content", "") for m in self.json.get("messages", []) if m.get("role") == "user"
        )

    @property
    def skill(self) -> str:
        return {
            PLAN_SYSTEM: "plan",
            MINE_SYSTEM: "mine",
            JUDGE_SYSTEM: "judge",
            WRITE_SYSTEM: "write",
            GROUND_SYSTEM: "ground",
        }.get(self.system, "?")


Responder = Callable[[Received], Reply]


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its timeout, a test's point) closed the socket before the
        # answer was written: expected, not a traceback on the test's output.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ModelServer:
    def __init__(self, respond: Responder, port: int = 0) -> None:
        self.respond = respond
        self.port = port  # 0: a free port (tests); a benchmark may name its own
        self.received: list[Received] = []
        self.replied: list[Reply] = []
        # The requests in the order their answers were ready (`received` is arrival order).
        self.completed: list[Received] = []
        # Requests being handled right now, and the most there ever were at once: what a
        # client's concurrency looks like from the server's side.
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    got = Received(
                        "POST",
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        server.in_flight,
                    )
                    server.received.append(got)
                try:
                    reply = server.respond(got)
                except Exception as exc:  # a bug in a test responder shows up as a 500
                    reply = Reply(500, {"error": {"type": "test_bug", "message": repr(exc)}})
                finally:
                    with server._lock:
                        server.in_flight -= 1
                with server._lock:
                    got.reply = reply
                    server.replied.append(reply)
                    server.completed.append(got)
                body = reply.body
                if isinstance(body, dict | list):
                    data = json.dumps(body).encode()
                    ctype = "application/json"
                elif isinstance(body, str):
                    data, ctype = body.encode(), "application/json"
                else:
                    data, ctype = body or b"", "application/json"
                self.send_response(reply.status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Quiet(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def by_skill(self, skill: str) -> list[Received]:
        return [r for r in self.received if r.skill == skill]


# -- response bodies ------------------------------------------------------------------------------


def claude_message(
    text: str | None,
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = None,
    cache_write: int | None = None,
    stop_reason: str = "end_turn",
    model: str = "claude-haiku-4-5",
    content: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    blocks = (
        content
        if content is not None
        else ([{"type": "text", "text": text}] if text is not None else [])
    )
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }


def claude_error(status: int, kind: str, message: str = "try again") -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}})


def chat_completion(
    text: str | None,
    *,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached: int | None = None,
    finish_reason: str = "stop",
    usage: bool = True,
    model: str = "local-model",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": text},
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached is not None:
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    return body


def scripted(replies: Iterable[Reply]) -> Responder:
    """Answer requests with `replies` in order; a request past the end gets a 500."""
    queue = list(replies)
    lock = threading.Lock()

    def respond(_got: Received) -> Reply:
        with lock:
            if not queue:
                return Reply(500, {"error": {"type": "test_script", "message": "script exhausted"}})
            return queue.pop(0)

    return respond


# -- a simulated model ----------------------------------------------------------------------

_PASSAGE = re.compile(r"<passage>\n(.*)\n</passage>", re.DOTALL)
_FINDING = re.compile(r"^(\d+)\. \(([^)]*)\) (.*)$", re.MULTILINE)
_CLAIM = re.compile(r"^C(\d+): (.*)$", re.M)
_PAIR = re.compile(r"^(\d+): C(\d+) / C(\d+)$", re.M)


def _field(user: str, name: str) -> str:
    m = re.search(rf"^{name}: (.*)$", user, re.MULTILINE)
    return m.group(1) if m else ""


class SimulatedModel:
    """Answers mole's four prompts the way a careful model might, deterministically:
    plans from the question, mines verbatim sentences (plus one fabricated and one too-short
    quote per chunk, which the quote check must discard), judges with word-overlap heuristics
    and writes answer sentences bound to the finding numbers it was given. Reports usage as a
    tokenizer of about four bytes a token would, with the system prompt billed as a cache
    read."""

    def __init__(
        self,
        *,
        fabricate: bool = True,
        later_rounds: bool = True,
        throttle_first_mine: bool = False,
        output_factor: float | None = None,
        mine_delay_s: float = 0.0,
        delay_s: float | tuple[float, float] = 0.0,
        seed: int = 0,
        refuse_above: int | None = None,
        refuse_status: int = 429,
        refuse_retry_after: str | None = None,
    ) -> None:
        self.fabricate = fabricate
        self.later_rounds = later_rounds
        # A server that ignores the limit: report `output_factor` x the request's max_tokens
        # as output tokens (issue 11 saw an OpenAI-compatible server do this).
        self.output_factor = output_factor
        # A slow model: each mining answer waits this long, so a test can kill or interrupt a
        # session while a call is in flight.
        self.mine_delay_s = mine_delay_s
        # Latency, as a real API has: every answer waits `delay_s` seconds, or a random time
        # in [lo, hi] drawn from `seed` (so completion order differs from request order).
        self.delay_s = delay_s
        self._rng = random.Random(seed)
        # A server with a concurrency limit: a request arriving while more than `refuse_above`
        # are being handled is refused at once with `refuse_status` (429 rate limited, 529
        # overloaded), with a retry-after header when `refuse_retry_after` is set.
        self.refuse_above = refuse_above
        self.refuse_status = refuse_status
        self.refuse_retry_after = refuse_retry_after
        self.refused = 0
        # (skill, model, fresh input, output, cache read) of every answer, logged before it is
        # sent: what the provider would bill.
        self.usages: list[tuple[str, str, int, int, int]] = []
        # Answer the first mining request with a 429 (retry-after 0), so a session exercises
        # the retry path and a recording holds a retried exchange.
        self.throttle_first_mine = throttle_first_mine
        self._lock = threading.Lock()

    def answer(self, got: Received) -> str:
        skill, user = got.skill, got.user
        if skill == "plan":
            rnd = int(_field(user, "Round") or 1)
            question = _field(user, "Question")
            if rnd == 1:
                subs = [{"text": p.text, "query": p.query} for p in plan_questions(question)[:3]]
            elif rnd == 2 and self.later_rounds and _field(user, "Contradictions found") != "0":
                subs = [
                    {
                        "text": f"Which newer studies settle the disagreement about "
                        f"{topic_of(question)}?",
                        "query": f"{topic_of(question)} newer study",
                    }
                ]
            else:
                subs = []
            return json.dumps({"sub_questions": subs})
        if skill == "mine":
            m = _PASSAGE.search(user)
            chunk = m.group(1) if m else ""
            req = MineRequest(_field(user, "Question"), _field(user, "Sub-question"), chunk)
            claims = [{"text": d.text, "quote": d.quote} for d in mine_sentences(req)]
            if self.fabricate and claims:
                first = claims[0]["quote"]
                claims.append(
                    {
                        "text": "A paraphrase the page never printed.",
                        "quote": first.replace(" ", "  ").replace("e", "E", 1)
                        + " and this was not in the page",
                    }
                )
                claims.append({"text": "Too short to check.", "quote": first.split()[0]})
            return json.dumps({"claims": claims})
        if skill == "judge":
            # Each claim is listed once ("C3: text"), the pairs name them ("0: C1 / C3").
            claims = {m.group(1): m.group(2) for m in _CLAIM.finditer(user)}
            verdicts = []
            for m in _PAIR.finditer(user):
                v = judge_pair(claims[m.group(2)], claims[m.group(3)])
                verdict: dict[str, object] = {"index": int(m.group(1)), "relation": v.relation}
                if v.relation != "neither":  # as the prompt asks: no rationale for neither
                    verdict["rationale"] = v.rationale
                if v.relation == "contradicts":
                    # As the prompt asks (issue 31): subject, attribute and the two values,
                    # read off the extractive judge's rationale, which names them.
                    verdict.update(_frame_of(v.rationale))
                verdicts.append(verdict)
            return json.dumps({"verdicts": verdicts})
        if skill == "write":
            # Sentences bound to finding numbers, as the prompt asks: one paraphrase-like
            # sentence (a lead-in plus the quote) and one verbatim quote.
            found = _FINDING.findall(user)
            sentences = []
            for i, (n, _flags, text) in enumerate(found[:2]):
                quote = text.strip("\u201c\u201d")
                said = quote if i else f"According to the sources, {quote[:1].lower()}{quote[1:]}"
                sentences.append({"text": said, "findings": [int(n)]})
            return json.dumps({"answered": True, "sentences": sentences})
        if skill == "ground":
            m = _PASSAGE.search(user)
            passage = " ".join((m.group(1) if m else "").split())
            claim = " ".join(_field(user, "Claim").split())
            verdict = "supported" if claim and claim in passage else "undecided"
            return json.dumps({"verdict": verdict, "rationale": "verbatim check"})
        return "I do not know this prompt."

    def usage(self, got: Received, text: str) -> tuple[int, int, int]:
        system = len(got.system.encode())
        rest = len(got.body) - system
        return math.ceil(rest / 4), math.ceil(len(text.encode()) / 4), math.ceil(system / 4)

    def _delay(self) -> float:
        if isinstance(self.delay_s, tuple):
            lo, hi = self.delay_s
            with self._lock:
                return self._rng.uniform(lo, hi)
        return self.delay_s

    def __call__(self, got: Received) -> Reply:
        if self.refuse_above is not None and got.in_flight > self.refuse_above:
            with self._lock:
                self.refused += 1
            kind = "rate_limit_error" if self.refuse_status == 429 else "overloaded_error"
            headers = {"retry-after": self.refuse_retry_after} if self.refuse_retry_after else {}
            return Reply(
                self.refuse_status,
                {"type": "error", "error": {"type": kind, "message": "too many requests"}},
                headers,
            )
        if got.skill == "mine" and self.throttle_first_mine:
            with self._lock:
                throttle, self.throttle_first_mine = self.throttle_first_mine, False
            if throttle:
                return Reply(
                    429,
                    {
                        "type": "error",
                        "error": {"type": "rate_limit_error", "message": "slow down"},
                    },
                    {"retry-after": "0"},
                )
        text = self.answer(got)
        fresh, out, cached = self.usage(got, text)
        body = got.json
        if self.output_factor is not None:
            bound = body.get("max_tokens") or body.get("max_completion_tokens") or 0
            out = math.ceil(int(bound) * self.output_factor)
        if got.skill == "mine" and self.mine_delay_s:
            time.sleep(self.mine_delay_s)
        delay = self._delay()
        if delay:
            time.sleep(delay)
        with self._lock:
            self.usages.append((got.skill, body.get("model", ""), fresh, out, cached))
        if got.path.endswith("/chat/completions"):
            return Reply(
                200,
                chat_completion(
                    text,
                    prompt_tokens=fresh + cached,
                    completion_tokens=out,
                    cached=cached,
                    model=body.get("model", ""),
                ),
            )
        return Reply(
            200,
            claude_message(
                text,
                input_tokens=fresh,
                output_tokens=out,
                cache_read=cached,
                cache_write=0,
                model=body.get("model", ""),
            ),
        )


class HeldModel(SimulatedModel):
    """A simulated model that holds the `nth` request of one skill until the test says so, so
    a test can stop the client with that call in flight, in a stage it chose, without guessing
    a time. `arrived` is set when the held request comes in; the answer (and the usage the
    provider bills) is computed only once `release` is set, as a provider that answers after
    its client went away would. Every other request is answered at once."""

    def __init__(self, skill: str, nth: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hold_skill, self.hold_nth = skill, nth
        self.seen = 0
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, got: Received) -> Reply:
        if got.skill == self.hold_skill:
            with self._lock:
                self.seen += 1
                held = self.seen == self.hold_nth
            if held:
                self.arrived.set()
                # Bounded only so a broken test cannot hang the server thread forever.
                self.release.wait(timeout=600)
        return super().__call__(got)
