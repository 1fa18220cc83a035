"""Who may change things through the status page: the token in the state dir.

``<state>/http-token`` holds one secret. API clients send it as
``Authorization: Bearer <token>``; people type it once into the login form,
which sets an HttpOnly, SameSite=Strict cookie holding an HMAC of the token
(never the token itself). Form posts and cookie-authenticated JSON posts also
carry a CSRF value (another HMAC of the token) in a hidden field or the
``X-CSRF-Token`` header. On loopback the token file is created when missing;
any other address needs it to exist already (see :func:`load_token`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

TOKEN_FILE = "http-token"
COOKIE = "kbwatch_session"


class NoToken(Exception):
    """A non-loopback bind without a token file."""


def load_token(state: Path, create: bool) -> str:
    """The token (created with mode 0600 when ``create`` and missing)."""
    path = state / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if token:
        return token
    if not create:
        raise NoToken(f"no token in {path}: a page on a non-loopback address needs one "
                      f"(put a long random line in that file, mode 600)")
    token = secrets.token_urlsafe(32)
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token


class Guard:
    """Checks credentials against one token."""

    def __init__(self, token: str):
        self._token = token.encode()
        self.session = self._mac(b"session")
        self.csrf = self._mac(b"csrf")

    def _mac(self, what: bytes) -> str:
        return hmac.new(self._token, what, hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.strip().encode(), self._token)

    def bearer_ok(self, header: str | None) -> bool:
        if not header or not header.lower().startswith("bearer "):
            return False
        return self.token_ok(header[7:])

    def cookie_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value, self.session)

    def csrf_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value, self.csrf)
