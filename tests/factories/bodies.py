"""Hostile request bodies over raw sockets against a real `moedash serve`, and the
server's memory as the kernel counts it (/proc: resident now, and the peak).

Used by tests/api/test_body_budget.py (limits hold, answers are small JSON) and
bench/bodies.py (the RSS figures in docs/security.md). Loopback only; every body is
bounded by the caller."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from pathlib import Path

DASH = "/_dash-update-component"
SNAPSHOT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def post_routes() -> list[str]:
    """Every POST route of the API (from the committed OpenAPI document) and the Dash
    callback route."""
    paths = json.loads(SNAPSHOT.read_text(encoding="utf-8"))["paths"]
    return sorted(p for p, ops in paths.items() if "post" in ops) + [DASH]


def server_pid(base: str) -> int:
    """The process serving ``base`` (the `moedash serve --port N` started for it)."""
    port = base.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"moedash.cli" in argv and b"serve" in argv and port.encode() in argv:
            return int(proc.name)
    raise LookupError(f"no moedash serve process for {base}")


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` (resident now) and ``VmHWM`` (the peak so far) of ``pid`` in KiB."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def connect(base: str, timeout: float = 20) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    assert sock.getpeername()[0] == "127.0.0.1"  # loopback only
    return sock


def head(path: str, length: int | None, ctype: str = "application/json") -> bytes:
    """Request head of a POST with a declared length, or chunked when ``length`` is None."""
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    chunked = "Transfer-Encoding: chunked\r\n" if length is None else ""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n{size}{chunked}\r\n"
    ).encode()


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def read_answer(sock: socket.socket) -> Answer:
    """The response on ``sock`` (status, headers, body by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if not data:
        return Answer(0)
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Answer(int(lines[0].split(" ", 2)[1]), headers, rest)


def send_chunked(sock: socket.socket, total: int, chunk: int = 64 * 1024) -> int:
    """Send up to ``total`` bytes as chunks of ``chunk``; stops when the server closes.
    Returns the bytes sent."""
    sent = 0
    piece = b"x" * chunk
    try:
        while sent < total:
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
    except OSError:
        pass  # the server answered and closed
    return sent


def send_body(sock: socket.socket, body: bytes) -> bool:
    """Send ``body``; False when the server closed first (it answered already)."""
    try:
        sock.sendall(body)
    except OSError:
        return False
    return True
