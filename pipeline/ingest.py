"""One-shot ``kbwatch ingest``: recover, queue what sources/ holds, drain, summarise."""

from __future__ import annotations

from loguru import logger

from pipeline.kb import KnowledgeBase
from pipeline.runner import FinishedRun, Runner


def run_ingest(kb: KnowledgeBase, names: list[str], progress: bool = False) -> tuple[dict[str, int], list[dict]]:
    """Ingest what sources/ holds now; holds the root's service lock while it works."""
    from pipeline.service import ServiceLock

    lock = ServiceLock(kb.state)
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
    if _needs_workers(kb, [item.entry.path.suffix for item in todo]):
        runner.prestart_workers()  # they warm up while the first files are hashed and checked
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


def _needs_workers(kb: KnowledgeBase, exts: list[str]) -> bool:
    from pipeline.parsing import choose_parser

    isolate = kb.settings["stages"]["parse"]["isolate"]
    if isolate is False:
        return False
    for ext in set(e.lower() for e in exts):
        info = choose_parser(kb.plugins, ext)
        if info is not None and (isolate is True or not info.inprocess):
            return True
    return False
