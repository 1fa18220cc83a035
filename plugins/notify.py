"""Notifications for the people who drop files: failures, documents waiting for review,
optionally a digest of successes, as a JSON POST to webhooks and/or an e-mail over SMTP.

Implements ``kb_run_finished``: the committing thread only appends the run to its
project's batch (a dict under a lock). One daemon thread sends each project's
batch ``[notify] batch_seconds`` after its first run, retrying every destination
on its own with tenacity (exponential backoff, ``max_attempts``), so a slow or
dead receiver never holds up a commit. A message given up is logged with its
summary; the runs themselves are in runs/ and the journal whatever happens
here. Batches still waiting when the process exits are sent then (one attempt
each, so exit is not held up long). Configured in ``[notify]``.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.lazylog import logger

KINDS = ("failed", "review", "done")
MAX_ITEMS = 200  # runs listed per kind in one message (the counts are always complete)


def pending_findings(run) -> list:
    """The run's findings that wait for a decision (``run.status`` is the project's, not the document's)."""
    return [f for f in run.findings if getattr(f, "decision", "pending") == "pending"]


def kind_of(run) -> str | None:
    """Which notification a finished run belongs to (None: not one to report)."""
    if run.outcome in ("failed", "conflict"):
        return "failed"
    if run.outcome == "done":
        return "review" if pending_findings(run) else "done"
    return None


def summarize(project: str, runs: list, page: str | None = None) -> dict:
    """The JSON summary of one project's batch."""
    out: dict = {"source": "kbwatch", "host": socket.gethostname(), "project": project,
                 "from": min(r.finished_at for r in runs), "to": max(r.finished_at for r in runs),
                 "counts": {k: 0 for k in KINDS}, "failed": [], "review": [], "done": []}
    for run in runs:
        kind = kind_of(run)
        out["counts"][kind] += 1
        if len(out[kind]) >= MAX_ITEMS:
            continue
        item = {"run_id": run.run_id, "source": run.source, "name": run.name, "finished_at": run.finished_at}
        if kind == "failed":
            item.update(outcome=run.outcome, error=run.error)
        elif kind == "review":
            waiting = pending_findings(run)
            item.update(findings=len(waiting), rules=sorted({f.rule for f in waiting}))
        out[kind].append(item)
    if page:
        out["page"] = page
    return out


def subject_of(summary: dict) -> str:
    c = summary["counts"]
    parts = [f"{c['failed']} failed" if c["failed"] else "", f"{c['review']} waiting for review" if c["review"] else "",
             f"{c['done']} done" if c["done"] else ""]
    return f"[kbwatch] {summary['project']}: " + ", ".join(p for p in parts if p)


def mail_body(summary: dict) -> str:
    lines = [subject_of(summary)[len("[kbwatch] "):], ""]
    for item in summary["failed"]:
        lines.append(f"{item['outcome']}: {item['source']}: {item['error'] or ''}")
    for item in summary["review"]:
        lines.append(f"waiting for review: {item['source']} ({item['findings']} finding(s): {', '.join(item['rules'])})")
    for item in summary["done"]:
        lines.append(f"done: {item['source']}")
    if summary.get("page"):
        lines += ["", f"status page: {summary['page']}"]
    lines += ["", f"run ids are in `kbwatch runs --project {summary['project']}`; retry with `kbwatch retry`, "
                  f"review with `kbwatch review {summary['project']}`."]
    return "\n".join(lines) + "\n"


# smtplib, email, urllib.request and tenacity are imported where a notification is sent: every
# command registers this plugin, and those imports were ~40 ms of every command's start-up

def post_webhook(url: str, summary: dict, timeout: float) -> None:
    import urllib.request

    body = json.dumps(summary, ensure_ascii=False).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": "kbwatch"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # raises on 4xx/5xx
        resp.read(1024)


def send_mail(cfg: dict, summary: dict) -> None:
    import smtplib
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"] = subject_of(summary)
    msg["From"] = cfg["mail_from"]
    msg["To"] = ", ".join(cfg["mail_to"])
    msg.set_content(mail_body(summary))
    msg.add_attachment(json.dumps(summary, ensure_ascii=False, indent=2).encode("utf-8"),
                       maintype="application", subtype="json", filename="kbwatch-summary.json")
    cls = smtplib.SMTP_SSL if cfg["smtp_ssl"] else smtplib.SMTP
    with cls(cfg["smtp_host"], cfg["smtp_port"], timeout=cfg["timeout_seconds"]) as smtp:
        if cfg["smtp_starttls"] and not cfg["smtp_ssl"]:
            smtp.starttls()
        if cfg["smtp_user"]:
            smtp.login(cfg["smtp_user"], os.environ.get(cfg["smtp_password_env"], ""))
        smtp.send_message(msg)


class Notifier:
    """Per-project batches and the thread that sends them."""

    def __init__(self, cfg: dict, page: str | None):
        self.cfg, self.page = cfg, page
        self.events = set(cfg["events"])
        self._batches: dict[str, list] = {}
        self._due: dict[str, float] = {}
        self._cond = threading.Condition()
        self._closed = False
        self.thread = threading.Thread(target=self._loop, name="kbwatch-notify", daemon=True)
        self.thread.start()

    def destinations(self) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = [(url, lambda s, u=url: post_webhook(u, s, self.cfg["timeout_seconds"]))
                                         for url in self.cfg["webhooks"]]
        if self.cfg["smtp_host"] and self.cfg["mail_to"]:
            out.append((f"smtp://{self.cfg['smtp_host']}:{self.cfg['smtp_port']}", lambda s: send_mail(self.cfg, s)))
        return out

    def add(self, run) -> None:
        if kind_of(run) not in self.events:
            return
        with self._cond:
            self._batches.setdefault(run.project, []).append(run)
            self._due.setdefault(run.project, time.monotonic() + self.cfg["batch_seconds"])
            self._cond.notify()

    def _take_due(self, everything: bool = False) -> list[tuple[str, list]]:
        now = time.monotonic()
        ready = [p for p, at in self._due.items() if everything or at <= now]
        out = []
        for p in ready:
            del self._due[p]
            out.append((p, self._batches.pop(p)))
        return out

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    batch = self._take_due()
                    if batch:
                        break
                    wait = min(self._due.values(), default=time.monotonic() + 3600) - time.monotonic()
                    self._cond.wait(max(0.01, wait))
                else:
                    return
            for project, runs in batch:
                self.send(project, runs, self.cfg["max_attempts"])

    def send(self, project: str, runs: list, attempts: int) -> None:
        import smtplib
        import urllib.error

        import tenacity

        summary = summarize(project, runs, self.page)
        for name, deliver in self.destinations():
            retrying = tenacity.Retrying(
                stop=tenacity.stop_after_attempt(attempts),
                wait=tenacity.wait_exponential(multiplier=0.5, max=self.cfg["backoff_max_seconds"]),
                retry=tenacity.retry_if_exception_type((OSError, smtplib.SMTPException, urllib.error.URLError)),
                before_sleep=lambda state, n=name: logger.warning(
                    "notification to {} failed (attempt {}/{}): {}", n, state.attempt_number, attempts,
                    state.outcome.exception()),
                reraise=True,
            )
            try:
                retrying(deliver, summary)
                logger.debug("notification sent to {}: {}", name, subject_of(summary))
            except Exception as exc:  # given up: say what was not delivered (the journal has the runs)
                logger.error("notification to {} given up after {} attempt(s) ({}): {}", name, attempts,
                             " ".join(str(exc).split()), subject_of(summary))

    def close(self) -> None:
        """Stop the thread; send what is still waiting (one attempt each)."""
        with self._cond:
            self._closed = True
            left = self._take_due(everything=True)
            self._cond.notify()
        for project, runs in left:
            self.send(project, runs, 1)


_notifier: Notifier | None = None
_notifier_key: str | None = None
_guard = threading.Lock()


def _page_url(settings: dict) -> str | None:
    address = settings.get("service", {}).get("http") or ""
    if not address or address.endswith(":0"):
        return None
    return f"http://{address}/"


def notifier_for(settings: dict) -> Notifier | None:
    """The process's notifier for this configuration (None when nothing is configured)."""
    global _notifier, _notifier_key
    cfg = settings["notify"]
    if not cfg["webhooks"] and not (cfg["smtp_host"] and cfg["mail_to"]):
        return None
    key = json.dumps(cfg, sort_keys=True)
    with _guard:
        if _notifier is None or _notifier_key != key:
            if _notifier is not None:
                _notifier.close()
            _notifier, _notifier_key = Notifier(dict(cfg), _page_url(settings)), key
        return _notifier


@atexit.register
def _flush_at_exit() -> None:
    if _notifier is not None:
        _notifier.close()


@hookimpl
def kb_run_finished(run, settings):
    notifier = notifier_for(settings)
    if notifier is not None:
        notifier.add(run)
