"""A running service puts its state dir back when it is deleted or replaced under it.

Checked at each heartbeat, in a background thread (kbwatch.pipeline.service): the state dir, the pid file
``watch.lock``, the ``busy`` marker, the journal and the search index. The
journal and index are written back from the live databases the service still
has open (SQLite's online backup, nothing lost); a journal that is unusable
too is rebuilt from runs/. One warning line says what was restored. The
single-service guarantee does not depend on any of this: the lock on the
root directory itself holds throughout (kbwatch.pipeline.service.ServiceLock).
"""

from __future__ import annotations

import os
import threading

from kbwatch.pipeline.lazylog import logger


class StateGuard:
    def __init__(self, kb, lock):
        self.kb = kb
        self.lock = lock
        self._running = threading.Lock()

    def check_soon(self) -> None:
        """Run :meth:`check` in a background thread (one at a time).

        The service's main loop beats the heartbeat and takes new files; the
        check may wait for the journal or index while a large commit holds
        them, so it never runs in that loop.
        """
        if not self._running.acquire(blocking=False):
            return  # the previous check is still going

        def run() -> None:
            try:
                self.check()
            finally:
                self._running.release()

        threading.Thread(target=run, name="kbwatch-state-guard", daemon=True).start()

    def check(self) -> list[str]:
        """Restore whatever of the state dir went missing; returns what was restored."""
        restored: list[str] = []
        try:
            if not self._unlinked():
                return restored
            if not self.kb.state.is_dir():
                self.kb.state.mkdir(parents=True, exist_ok=True)
                restored.append("the state dir")
                from kbwatch.pipeline.logs import reopen_log_file

                reopen_log_file()  # the log file went with it
            if self.lock.restore_pid_file():
                restored.append("watch.lock")
            with self.kb.journal.locked():  # runs committing meanwhile wait, so none is counted twice
                journal = self.kb.journal.restore_file()
                if journal == "empty":
                    from kbwatch.pipeline.rebuild_journal import rebuild_journal

                    n_runs, _ = rebuild_journal(self.kb)
            if journal == "empty":
                restored.append(f"the journal (rebuilt from runs/: {n_runs} runs)")
            elif journal is not None:
                restored.append("the journal" + (" (adopted the one now in place)" if journal == "adopted" else ""))
            self._heal_damaged_journal()
            if self._restore_index():
                restored.append("the search index")
            busy = self.kb.state / "busy"
            if restored and not busy.exists():
                busy.write_text(f"{os.getpid()}\n")  # so a crash from now on is still noticed at the next start
        except Exception as exc:  # the service goes on; the next heartbeat tries again
            logger.error("could not restore the state dir {}: {}", self.kb.state, exc)
            return restored
        if restored:
            logger.warning("the state dir {} was deleted or changed under the running service; restored {}",
                           self.kb.state, ", ".join(restored))
        return restored

    def _unlinked(self) -> bool:
        """False when the state dir is reached through a symbolic link someone put in the root
        (its path was made a link to a folder elsewhere, after ``mv``): nothing is restored
        through it, or the lock, the journal and the index would be written (and a journal
        found there adopted) outside the root. A link in place of the state dir itself is
        removed (the link only: what it points to is not touched), and the state dir is then
        made again as when it is deleted; a link further up is left, with an error line."""
        from kbwatch.pipeline.fsutil import linked_state_dir

        why = linked_state_dir(self.kb.root, self.kb.state)
        if why is None:
            return True
        if not os.path.islink(self.kb.state):
            logger.error("{}; nothing restored", why)
            return False
        os.unlink(self.kb.state)
        logger.error("the state dir {} was replaced by a symbolic link under the running service: the link "
                     "was removed (nothing written through it) and the state dir is made again", self.kb.state)
        return True

    def _heal_damaged_journal(self) -> None:
        """A journal damaged in place while open: move it aside and rebuild it from runs/ (one warning line)."""
        import sqlite3

        from kbwatch.pipeline.heal import is_corrupt

        journal = self.kb.journal
        with journal.locked():
            try:  # cheap: a full quick_check runs when the journal is opened, not at every heartbeat
                journal.db.conn.execute("select count(*) from sqlite_master").fetchone()
                journal.service()
                return
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise
                reason = str(exc)
            from kbwatch.pipeline.rebuild_journal import rebuild_journal

            aside = journal.start_fresh()
            n_runs, n_findings = rebuild_journal(self.kb)
        logger.warning("journal {} could not be used by SQLite ({}): moved aside as {} and rebuilt from runs/ "
                       "({} runs, {} findings)", journal.path, reason, aside.name, n_runs, n_findings)

    @staticmethod
    def _restore_index() -> bool:
        from kbwatch.pipeline.heal import restore_live

        return restore_live()  # the search index registers itself (plugins/retrieval/navigation.py)
