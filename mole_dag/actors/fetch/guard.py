"""The SSRF guard: a URL the fetcher follows came from a search result or a redirect, so it is
attacker-chosen, and must not reach the machine's own network.

Two checks, both on every hop. Before a request (first or redirect) the URL's scheme and host
are checked and the host is resolved; every address it resolves to must be public. Then, at
connect time, the network backend resolves the host again, checks again, and connects to exactly
the address it checked: a DNS answer that changes between the two (rebinding) meets the second
check, and no socket is ever opened to an address nobody checked. Hosts on an explicit
allow-list (a user's own service, 127.0.0.1 in tests) skip the address check, by name only."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from mole_dag.actors.fetch.hosts import normalise_host

ALLOWED_SCHEMES = ("http", "https")


class SSRFRefused(Exception):
    """The URL or one of its addresses is not one we may connect to. The message says why."""


@dataclass(frozen=True)
class Policy:
    """What a fetcher may connect to beyond the public internet: hosts named explicitly."""

    allow_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, hosts: Iterable[str]) -> Policy:
        return cls(frozenset(normalise_host(h) for h in hosts if h.strip()))

    def allows(self, host: str) -> bool:
        return normalise_host(host) in self.allow_hosts


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64): they route to the
    IPv4 host, so they are checked as that host."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal_reason(address: str) -> str | None:
    """Why an address may not be connected to, or None when it is public."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            why = refusal_reason(str(inner))
            return f"{address} embeds {inner}: {why}" if why else None
    for name in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return f"{address} is a {name.replace('_', '-')} address"
    if not ip.is_global:  # shared address space (100.64/10) and the other special ranges
        return f"{address} is not a public address"
    return None


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to. Module-level so tests can stand in a resolver."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0])
        if addr not in out:
            out.append(addr)
    return out


def checked_addresses(host: str, port: int, policy: Policy) -> list[str]:
    """Resolve the host and return the addresses we may connect to, or raise SSRFRefused.
    All of them must be public: a name with one private answer is refused whole, because which
    answer a connection uses is not ours to choose once the name is handed on."""
    try:
        addrs = resolve(normalise_host(host), port)
    except (OSError, UnicodeError) as exc:
        raise ConnectionError(f"cannot resolve {host}: {exc}") from None
    if not addrs:
        raise ConnectionError(f"{host} resolves to no address")
    if policy.allows(host):
        return addrs
    for addr in addrs:
        why = refusal_reason(addr)
        if why:
            raise SSRFRefused(f"refused {host}: {why}")
    return addrs


def check_url(url: str, policy: Policy) -> None:
    """The pre-request check of one hop: scheme, host present, addresses public."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SSRFRefused(f"malformed URL: {exc}") from None
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        raise SSRFRefused(f"scheme {parts.scheme or '(none)'!r} is not http or https")
    host = parts.hostname
    if not host:
        raise SSRFRefused("the URL names no host")
    if parts.username or parts.password:
        raise SSRFRefused("URLs with credentials are not fetched")
    checked_addresses(host, port or (443 if parts.scheme.lower() == "https" else 80), policy)


class GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy permits, resolving and checking at connect time."""

    def __init__(self, policy: Policy, inner: httpcore.NetworkBackend | None = None) -> None:
        self.policy = policy
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addrs = checked_addresses(host, port, self.policy)
        except SSRFRefused as exc:
            # httpcore maps ConnectError to httpx.ConnectError; the fetcher reads the cause.
            raise httpcore.ConnectError(f"ssrf: {exc}") from exc
        except ConnectionError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        last: Exception | None = None
        for addr in addrs:
            try:
                return self._inner.connect_tcp(addr, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("ssrf: unix sockets are never fetched")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with the guarded backend underneath and no proxy from the environment
    (a proxy would resolve names itself, out of the guard's sight)."""

    def __init__(self, policy: Policy, limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=32, max_keepalive_connections=16)
        super().__init__(trust_env=False, limits=limits)
        # httpx has no public hook for the network backend; replace the pool it built with an
        # identical one that has ours. Checked, so an httpx that changes this fails loudly.
        if not isinstance(getattr(self, "_pool", None), httpcore.ConnectionPool):
            raise RuntimeError("this httpx version builds its pool differently; update the guard")
        self._pool.close()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )


def is_ssrf_error(exc: BaseException) -> bool:
    """Whether an httpx error was the guard refusing at connect time."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, SSRFRefused) or str(cur).startswith("ssrf: "):
            return True
        cur = cur.__cause__ or cur.__context__
    return False
