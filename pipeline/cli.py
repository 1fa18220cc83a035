"""The ``kbwatch`` command line (``run.py`` is the same): a thin layer over the core.

Exit status: 0 all well; 1 something failed or was refused (the output says
what); 2 usage or configuration error (one line, never a traceback).
Plugins add commands through ``kb_register_commands``.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import click

from kbwatch.pipeline import __version__, confine
from kbwatch.pipeline.fsutil import printable
from kbwatch.pipeline.config import resolve_root, root_argument
from kbwatch.pipeline.errors import ConfigError, KbwatchError
from kbwatch.pipeline.lazylog import logger

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class KbwatchGroup(click.Group):
    """Maps kbwatch errors to exit codes with one clear line."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            click.echo(printable(f"Error: {exc}", keep="\n"), err=True)
            ctx.exit(EXIT_USAGE)
        except KbwatchError as exc:
            click.echo(printable(f"Error: {exc}", keep="\n"), err=True)
            ctx.exit(EXIT_FAILED)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug: one line here, the traceback in the log file
            from kbwatch.pipeline.logs import log_internal_error

            path = log_internal_error(exc, f"kbwatch {ctx.invoked_subcommand or ''}".strip())
            text = " ".join(str(exc).split())[:500]
            where = f" (details in {path})" if path else ""
            click.echo(f"Error: internal error: {type(exc).__name__}: {text}{where}", err=True)
            ctx.exit(EXIT_FAILED)


def root_options(fn):
    """``--root`` and ``--config``, shared by every command."""

    @click.option("--root", "root", envvar="KBWATCH_ROOT", default=None, metavar="DIR",
                  help="Knowledge-base root (default: current directory or $KBWATCH_ROOT).")
    @click.option("--config", "config_file", default=None, metavar="FILE",
                  type=click.Path(dir_okay=False, path_type=Path),
                  help="Extra TOML config, overriding <root>/kbwatch.toml.")
    @functools.wraps(fn)
    def wrapper(*args, root=None, config_file=None, **kwargs):
        return fn(*args, root=root, config_file=config_file, **kwargs)

    return wrapper


def json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output (DESIGN §12).")(fn)


def open_kb(root: str | None, config_file: Path | None, verbose: bool = False, quiet: bool = False, log_files: bool = True):
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    kb = KnowledgeBase(resolve_root(root), config_file)
    setup_logging(kb.settings, kb.state if log_files else None, verbose=verbose, quiet=quiet)
    return kb


@click.group(cls=KbwatchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbwatch")
def cli():
    """kbwatch: turn a shared folder of documents into cited, risk-scanned knowledge bases.

    Drop files into <root>/<project>/sources/; `kbwatch watch` (or `kbwatch
    ingest`) parses them to parsed/*.md, archives the originals, and keeps
    manifest.json, project.md and KNOWLEDGE.md current.
    """


# -- init --------------------------------------------------------------------


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--language", type=click.Choice(["zh", "en"]), default=None, help="Headings of project.md.")
@root_options
def init(names, language, root, config_file):
    """Create projects (idempotent; never overwrites existing files).

    Example: kbwatch init 技术方案 --root /srv/kb

    A --root that does not exist yet is created (with its parents), as `git init DIR` does.
    """
    made = _make_root(root)
    kb = open_kb(root, config_file, log_files=False)
    if made is not None:
        click.echo(f"created the root folder {made}")
    for name in names:
        path, created = kb.init_project(name, language)
        what = ", ".join(created) if created else "nothing (already complete)"
        click.echo(f"{name}: created {what} in {path}")


def _make_root(root: str | None) -> Path | None:
    """``init``'s root, made when it does not exist yet (None when it did). Only ``init`` makes
    one: any other command given a root that is not there is a typo to report, not a folder to
    create. A path through a dangling link, or one where a file stands, is left to
    :func:`resolve_root`'s message."""
    value, path = root_argument(root)
    if os.path.lexists(path):
        return None
    try:
        path.mkdir(parents=True)
    except FileExistsError:  # made meanwhile (another init): nothing to report
        return None
    except OSError as exc:
        raise ConfigError(f"--root: {value}: cannot be created: {exc.strerror}") from None
    return path.resolve()


# -- ingest ------------------------------------------------------------------


@cli.command()
@click.argument("names", nargs=-1)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Override [service] workers.")
@click.option("-v", "--verbose", is_flag=True, help="Log every stage at DEBUG level.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors and the summary line.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@json_option
@root_options
def ingest(names, workers, verbose, quiet, progress, as_json, root, config_file):
    """Process what is in sources/ now (all projects, or NAMES), then exit.

    Exit 1 if any file failed or was refused.

    Example: kbwatch ingest 技术方案
    """
    from kbwatch.pipeline.ingest import run_ingest

    kb = open_kb(root, config_file, verbose=verbose, quiet=quiet or as_json)
    if workers:
        kb.settings["service"]["workers"] = workers
    show = sys.stderr.isatty() if progress is None else progress
    totals, runs = run_ingest(kb, list(names), progress=show and not as_json)
    from kbwatch.pipeline.project import loose_files, no_projects_hint, refused_projects

    refused = [] if names else refused_projects(kb.root)  # a refused NAME already stopped with its reason
    loose = None if names or refused or kb.projects() else loose_files(kb.root)
    summary = ", ".join(f"{totals.get(k, 0)} {k}" for k in ("done", "duplicate", "conflict", "failed"))
    if as_json:
        out = {"totals": {k: totals.get(k, 0) for k in ("done", "duplicate", "conflict", "failed")}, "runs": runs}
        if refused:
            out["refused_projects"] = [{"name": n, "reason": r} for n, r in refused]
        if loose is not None:
            out["no_projects"] = {"loose_files": loose, "hint": no_projects_hint(kb.root, loose)}
        click.echo(json.dumps(out, ensure_ascii=False))
    else:
        for name, reason in refused:
            click.echo(printable(f"refused project {name}: {reason}"), err=True)
        for run in runs:
            if run["outcome"] in ("failed", "conflict"):
                click.echo(printable(f"{run['outcome']}: {run['project']}/{run['source']}: {run['error'] or run['message']}"),
                           err=True)
        if loose is not None:  # `ingest --root` on a plain folder of documents: say where they go
            click.echo(printable(no_projects_hint(kb.root, loose)), err=True)
        click.echo(f"ingest: {summary}")
    kb.close()
    sys.exit(EXIT_FAILED if totals.get("failed") or totals.get("conflict") or refused or loose else EXIT_OK)


# -- demo --------------------------------------------------------------------


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default="demo-kb")
def demo(directory):
    """Create DIRECTORY with a sample project, ingest it once, and show the result.

    Example: kbwatch demo ./demo-kb && kbwatch watch --root ./demo-kb
    """
    from kbwatch.pipeline.demo import make_demo
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.logs import setup_logging

    kb, project = make_demo(directory)
    setup_logging(kb.settings, kb.state, quiet=True)
    # the demo builds project.md's overview too (the rebuild stage, after the ingest's commit),
    # so the first `kbwatch ask` shows a real summary, not the template's placeholder
    if "rebuild" in kb.plugins.stages() and "rebuild" not in kb.settings["pipeline"]["stages"]:
        kb.settings["pipeline"]["stages"] = [*kb.settings["pipeline"]["stages"], "rebuild"]
        kb.settings.setdefault("stages", {}).setdefault("rebuild", {})["every_n_ingests"] = 1
    totals, _ = run_ingest(kb, [project.name], progress=sys.stderr.isatty())
    kb.close()
    click.echo(confine.read_text(project / "project.md"))
    summary = ", ".join(f"{totals.get(k, 0)} {k}" for k in ("done", "duplicate", "conflict", "failed"))
    click.echo(f"demo: {summary}; knowledge base at {kb.root}")
    click.echo(f"next: kbwatch watch --root {kb.root}   (then drop files into {project / 'sources'})")


# -- watch -------------------------------------------------------------------


@cli.command()
@click.option("--polling/--no-polling", default=None, help="Force the polling observer on or off (default: [service] polling).")
@click.option("--settle", type=click.FloatRange(min=0), default=None, help="Override [service] settle_seconds.")
@click.option("--http", "http", default=None, metavar="HOST:PORT",
              help="Also serve the status page there (default: [service] http; \"\" turns it off).")
@click.option("-v", "--verbose", is_flag=True, help="Log at DEBUG level.")
@root_options
def watch(polling, settle, http, verbose, root, config_file):
    """Run the service: watch every project's sources/ and ingest what arrives.

    Stops cleanly on SIGTERM or Ctrl-C. Only one service runs per root.
    --http 127.0.0.1:8765 also serves the status page (reads open on loopback;
    writes need the token in <state_dir>/http-token).

    Example: kbwatch watch --root /srv/kb --http 127.0.0.1:8765
    """
    from kbwatch.pipeline.service import run_service

    kb = open_kb(root, config_file, verbose=verbose)
    if polling is not None:
        kb.settings["service"]["polling"] = polling
    if settle is not None:
        kb.settings["service"]["settle_seconds"] = settle
    if http is not None:
        from kbwatch.pipeline.config_rules import http_address

        problem = http_address(http)
        if problem:
            raise ConfigError(f"--http: {problem}")
        kb.settings["service"]["http"] = http
    code = run_service(kb)
    kb.close()
    sys.exit(code)


# -- status / runs / retry ---------------------------------------------------


@cli.command()
@json_option
@root_options
def status(as_json, root, config_file):
    """Projects, service state, queue, failures and pending reviews.

    Example: kbwatch status --json
    """
    from kbwatch.pipeline.status import collect_status, render_status

    kb = open_kb(root, config_file, log_files=False)
    kb.catch_up()
    data = collect_status(kb)
    if as_json:
        click.echo(json.dumps(data["public"], ensure_ascii=False))
    else:
        render_status(data)
    kb.close()


@cli.command()
@click.option("--project", default=None, help="Only this project.")
@click.option("--outcome", type=click.Choice(["done", "duplicate", "conflict", "failed", "running", "queued"]), default=None)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@root_options
def runs(project, outcome, limit, as_json, root, config_file):
    """List runs from the journal, newest first.

    Example: kbwatch runs --outcome failed --json
    """
    kb = open_kb(root, config_file, log_files=False)
    kb.catch_up()
    rows = [_public_run(r) for r in kb.journal.runs(project, outcome, limit)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
    else:
        from rich.console import Console
        from rich.table import Column, Table
        from rich.text import Text

        console = Console()
        if console.width < NARROW_COLUMNS:  # (80 columns left ~8 for each column but the id: "sourc…")
            _print_runs_narrow(console, rows)
            kb.close()
            return
        # whole run ids on one line, so they can be pasted into `retry`: the other columns fold
        id_width = max((len(r["run_id"]) for r in rows), default=3)
        run_column = Column("run", no_wrap=True, overflow="ignore", min_width=id_width)
        table = Table(run_column, "project", "source", "outcome", "error", "finished")
        for r in rows:
            table.add_row(r["run_id"], *(Text(printable(v)) for v in (r["project"], r["source"])), r["outcome"],
                          Text(printable(r["error"] or "")), r["finished_at"] or "")
        console.print(table)
    kb.close()


NARROW_COLUMNS = 110  # below this a terminal gets `runs` as one block per run, not a table


def _print_runs_narrow(console, rows: list[dict]) -> None:
    """Each run as a block: its whole id, outcome and time on the first line, then the project's
    file, then the error, each line folded at the terminal's width (never cut)."""
    from rich.text import Text

    for r in rows:
        console.print(Text(f"{r['run_id']}  {r['outcome']}  {r['finished_at'] or ''}".rstrip()), overflow="fold")
        console.print(Text("  " + printable(f"{r['project']}/{r['source']}")), overflow="fold")
        if r["error"]:
            console.print(Text("  " + printable(r["error"])), overflow="fold")


def _public_run(row: dict) -> dict:
    return {
        "run_id": row["run_id"], "project": row["project"], "source": row["source"], "name": row["name"],
        "outcome": row["outcome"], "status": row["status"], "attempts": row["attempts"] or 1,
        "error": row["error"], "started_at": row["started_at"], "finished_at": row["finished_at"],
    }


@cli.command()
@click.argument("run_ids", nargs=-1)
@click.option("--failed", "all_failed", is_flag=True, help="Retry every failed run (latest per file).")
@root_options
def retry(run_ids, all_failed, root, config_file):
    """Make failed runs eligible again; the next ingest or the service retries them.

    Example: kbwatch retry --failed
    """
    if not run_ids and not all_failed:
        raise ConfigError("give RUN_ID(s) or --failed")
    from kbwatch.pipeline.retry_policy import request_retry, retryable_latest

    kb = open_kb(root, config_file, log_files=False)
    rows = retryable_latest(kb.journal, [p.name for p in kb.projects()]) if all_failed else []
    for rid in run_ids:
        row = kb.journal.get_run(rid)
        if row is None:
            raise ConfigError(f"no such run: {rid}")
        rows.append(row)
    marked = 0
    for row in rows:
        if not request_retry(kb.journal, row):
            click.echo(printable(f"nothing to retry: {row['project']}/{row['source']} ({row['run_id']}) ended {row['outcome']}"))
            continue
        marked += 1
        click.echo(printable(f"will retry {row['project']}/{row['source']} ({row['run_id']})"))
    click.echo(f"{marked} run(s) marked for retry")
    kb.close()


# -- plugins -----------------------------------------------------------------


@cli.command()
@click.option("--all", "show_all", is_flag=True, help="Include built-in plugins.")
@json_option
@root_options
def plugins(show_all, as_json, root, config_file):
    """Loaded plugins, parsers with their extensions, and the stage order.

    Example: kbwatch plugins --all
    """
    kb = open_kb(root, config_file, log_files=False)
    ps = kb.plugins
    names = (ps.builtin if show_all else []) + ps.external
    plugin_rows = []
    for name in names:
        plugin = ps.pm.get_plugin(name)
        hooks = sorted(h.name for h in ps.pm.get_hookcallers(plugin) or [])
        plugin_rows.append({"name": name, "builtin": name in ps.builtin, "hooks": hooks})
    parsers = [  # every parser, built-in or not: which one serves an extension is what users ask
        {"name": p.name, "plugin": ps.plugin_name(p.plugin), "extensions": list(p.extensions), "priority": p.priority}
        for p in ps.parsers()
    ]
    stages = list(kb.settings["pipeline"]["stages"])
    available = sorted(ps.stages())
    if as_json:
        click.echo(json.dumps({"plugins": plugin_rows, "broken": ps.broken, "parsers": parsers,
                               "stages": stages, "available_stages": available}, ensure_ascii=False))
    else:
        click.echo("stages: " + " → ".join(stages))
        click.echo("available stages: " + ", ".join(available))
        click.echo("plugins:" if plugin_rows else "plugins: (no third-party plugins; --all shows built-ins)")
        for row in plugin_rows:
            click.echo(f"  {row['name']}{' (built-in)' if row['builtin'] else ''}: {', '.join(row['hooks'])}")
        for name, err in ps.broken.items():
            click.echo(f"  {name}: BROKEN, skipped: {err}")
        click.echo("parsers (highest priority first):")
        for p in parsers:
            click.echo(f"  {p['name']:<14} priority {p['priority']:<4} {' '.join(p['extensions'])}  [{p['plugin']}]")
    ps.configured_stages()  # an unknown stage name in the config: exit 2
    kb.close()


# -- journal -----------------------------------------------------------------


@cli.group()
def journal():
    """The journal: a SQLite mirror of every project's runs/."""


@journal.command("rebuild")
@root_options
def journal_rebuild(root, config_file):
    """Recreate the journal from runs/*.json.

    Example: kbwatch journal rebuild
    """
    from kbwatch.pipeline.rebuild_journal import rebuild_journal

    kb = open_kb(root, config_file, log_files=False)
    n_runs, n_findings = rebuild_journal(kb)
    click.echo(f"journal rebuilt: {n_runs} runs, {n_findings} findings")
    kb.close()


# -- doctor --------------------------------------------------------------------


@cli.command()
@json_option
@root_options
def doctor(as_json, root, config_file):
    """What this installation can and cannot do, and what to install.

    Exit 1 when something the configuration needs is missing.
    Example: kbwatch doctor --json
    """
    from kbwatch.pipeline.doctor import as_json as doctor_json, exit_code, render, run_checks

    kb = open_kb(root, config_file, log_files=False)
    checks = run_checks(kb)
    click.echo(json.dumps(doctor_json(checks), ensure_ascii=False) if as_json else render(checks))
    kb.close()
    sys.exit(exit_code(checks))


# -- entry point ---------------------------------------------------------------


def _option_value(argv: list[str], name: str) -> str | None:
    """The value of ``--name X`` / ``--name=X`` in ``argv`` (the last one wins, as in click)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def _command_settings(argv: list[str]) -> dict:
    """The settings the command line will run with (``--root``, ``--config``, kbwatch.toml),
    so that ``[pipeline] disable`` and ``plugins`` decide which commands exist; the defaults
    when they cannot be read (the command itself then reports the configuration error)."""
    from kbwatch.pipeline.config import load_defaults, load_settings

    try:
        config = _option_value(argv, "--config")
        return load_settings(resolve_root(_option_value(argv, "--root")), Path(config) if config else None)
    except Exception:
        settings = load_defaults()
        settings["_root"] = os.getcwd()
        return settings


def _register_plugin_commands(argv: list[str]) -> None:
    from kbwatch.pipeline.plugins import build_plugin_manager

    settings = _command_settings(argv)
    try:
        try:
            ps = build_plugin_manager(settings)
        except ConfigError:  # e.g. a [pipeline] plugins entry that does not load: the command says so
            settings["pipeline"]["plugins"] = []
            ps = build_plugin_manager(settings)
        ps.hook.kb_register_commands(cli=cli)
    except Exception as exc:  # a broken plugin must not take the CLI down
        logger.error("plugin commands could not be registered: {}", exc)


_registered = False


def get_cli(argv: list[str] | None = None) -> click.Group:
    """The CLI group with plugin commands registered (once per process).

    ``argv`` (the command line about to run) chooses the root and config files whose
    ``[pipeline] plugins`` / ``disable`` decide which plugin commands exist; without
    it, ``$KBWATCH_ROOT`` or the current directory."""
    global _registered
    if not _registered:
        _registered = True
        _register_plugin_commands(list(argv or []))
    return cli


def main(argv: list[str] | None = None) -> None:
    get_cli(sys.argv[1:] if argv is None else argv).main(args=argv, prog_name="kbwatch")


if __name__ == "__main__":  # pragma: no cover
    main()
