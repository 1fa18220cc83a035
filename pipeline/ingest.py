"""One-shot ``kbwatch ingest``: recover, queue what sources/ holds, drain, summarise."""

from __future__ import annotations

from kbwatch.pipeline.kb import KnowledgeBase
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.runner import FinishedRun, Runner


def run_ingest(kb: KnowledgeBase, names: list[str], progress: bool = False) -> tuple[dict[str, int], list[dict]]:
    """Ingest what sources/ holds now; holds the root's service lock while it works."""
    from kbwatch.pipeline.service import ServiceLock

    lock = ServiceLock(kb.state, kb.root)
    lock.acquire("kbwatch watch is running on this root (pid {pid}) and ingests sources/ itself; "
                 "`kbwatch status` shows its progress")
    try:
        totals = _ingest(kb, names, progress)
        kb.end_work()  # a clean end: the next start need not look for temp files
        return totals
    finally:
        lock.release()


def _ingest(kb: KnowledgeBase, names: list[str], progress: bool) -> tuple[dict[str, int], list[dict]]:
    projects = kb.projects(names or None)
    runner = Runner(kb.root, kb.settings, kb.plugins, kb.journal)
    runner.fork_workers = True  # several workers share one warm-up
    recovered = kb.recover()
    if recovered:
        logger.info("recovered {} interrupted run(s)", recovered)
    todo = []
    for project in projects:
        pending, waiting = kb.pending(project)
        todo += pending
        for line in waiting:
            logger.debug("{}: skipped {}", project.name, line)
    results: list[dict] = []

    def collect(run: FinishedRun) -> None:
        results.append({
            "run_id": run.run_id, "project": run.job.project.name, "source": run.ctx.source_rel if run.ctx else run.job.rel,
            "outcome": run.outcome, "message": run.message, "error": run.error,
        })
        if bar is not None:
            bar.advance(task)

    runner.on_finished.append(collect)
    bar = task = None
    if progress and todo:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True)
        bar.start()
        task = bar.add_task("ingest", total=len(todo))
    key = _order_key(kb)
    todo.sort(key=key)  # see _order_key: the outcome of a file does not depend on the order
    if todo and key(todo[-1])[0]:  # some file is parsed in a worker
        runner.prestart_workers()  # in the background: they warm up while in-process files run
    try:
        runner.start()
        for item in todo:
            runner.submit(item.project, item.entry.rel, attempt=item.attempt)
        runner.wait_idle()
    finally:
        runner.stop()
        if bar is not None:
            bar.stop()
    return dict(runner.totals), results


def _order_key(kb: KnowledgeBase):
    """The sort key for the order a one-shot batch runs in: (parsed in a worker?, -size).

    Files parsed in-process go first: they are done while the parse workers
    warm up. Then the files parsed in workers, largest first, so that the
    longest parses start early instead of running alone at the end of the
    batch (longest-processing-time-first, with the size standing in for the
    time).
    """
    from kbwatch.pipeline.parsing import choose_parser, isolated
    from kbwatch.pipeline.sources import split_name

    cache: dict[str, bool] = {}

    def in_worker(ext: str) -> bool:
        if ext not in cache:
            info = choose_parser(kb.plugins, ext)
            cache[ext] = info is not None and isolated(info, kb.settings)
        return cache[ext]

    return lambda item: (in_worker(split_name(item.entry.path.name)[1].lower()), -item.entry.size)
