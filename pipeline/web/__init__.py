"""The status page of ``kbwatch watch --http HOST:PORT`` (DESIGN §14).

:func:`start_page` binds the address in the calling thread (so a bad address
or a missing token stops the service before it starts, exit 2), then serves a
Starlette app with uvicorn in a daemon thread of the service; the runner never
waits for it. :meth:`StatusPage.stop` ends it within the service's stop. The
page opens its own journal connection (WAL: its reads never wait for the
runner's writes) and changes things only through the commands' code
(:mod:`kbwatch.pipeline.web.data`).
"""

from __future__ import annotations

import copy
import threading

from kbwatch.pipeline.errors import ConfigError
from kbwatch.pipeline.lazylog import logger


class StatusPage:
    def __init__(self, server, thread: threading.Thread, url: str, kb, sock):
        self.server, self.thread, self.url, self._kb, self._sock = server, thread, url, kb, sock

    def stop(self, timeout: float = 5.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(1.0)
        self._sock.close()
        self._kb.close()


def page_kb(kb):
    """A view of ``kb`` with its own journal connection and plugin manager (as a command has)."""
    view = copy.copy(kb)
    view._journal = None
    view._plugins = None
    view.plugins  # built now, not raced for by the first requests
    return view


def start_page(kb, address: str) -> StatusPage:
    """Serve the page on ``address`` (``HOST:PORT``); ConfigError when it cannot."""
    import uvicorn

    from kbwatch.pipeline.web.address import bind, is_loopback, parse_address
    from kbwatch.pipeline.web.app import create_app
    from kbwatch.pipeline.web.auth import Guard, NoToken, load_token

    try:
        host, port = parse_address(address)
    except ValueError as exc:
        raise ConfigError(f"--http / service.http: {exc}") from None
    loopback = is_loopback(host)
    try:
        token = load_token(kb.state, create=loopback)
    except NoToken as exc:
        raise ConfigError(f"refusing to serve the status page on {address}: {exc}") from None
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise ConfigError(f"cannot serve the status page on {address}: {exc.strerror or exc}") from None
    view = page_kb(kb)
    app = create_app(view, Guard(token), open_reads=loopback)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="kbwatch-page", daemon=True)
    thread.start()
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    url = f"http://{shown}:{bound_port}/"
    logger.info("status page at {} ({})", url, "reads open on loopback; writes need the token in "
                f"{kb.state / 'http-token'}" if loopback else "every request needs the token")
    return StatusPage(server, thread, url, view, sock)
