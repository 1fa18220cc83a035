"""The status page's listening address: ``HOST:PORT`` parsed, judged loopback or not, bound."""

from __future__ import annotations

import ipaddress
import socket


def parse_address(text: str) -> tuple[str, int]:
    """``"127.0.0.1:8765"`` / ``"[::1]:8765"`` / ``"localhost:0"`` -> (host, port); ValueError with the reason."""
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f'expected "HOST:PORT" (e.g. "127.0.0.1:8765" or "[::1]:8765"), not "{text}"')
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or not host or ":" in host:
            raise ValueError(f'expected "HOST:PORT" (e.g. "127.0.0.1:8765" or "[::1]:8765"), not "{text}"')
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f'the port must be a number from 0 to 65535, not "{port_text}"')
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (OSError with the reason when the address cannot be had)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, sockaddr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock
