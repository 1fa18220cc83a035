#!/usr/bin/env python3
"""Benchmark one-shot ``kbwatch ingest`` on small Markdown files (issue 2).

What it measures, each repeated ``--repeat`` times on a fresh temp root
(best and median printed, plus the spread between runs):

1. throughput: ``--files`` small Markdown files (300 B .. ~2 KB, English and
   Chinese, some in sub-folders) ingested through the real pipeline,
   in-process with ``kbwatch.pipeline.ingest.run_ingest(KnowledgeBase(root), [])``;
2. the floor on the same files: read + sha256 + durable copy (temp file,
   fsync, rename, fsync of the folder, as ``kbwatch.pipeline.fsutil.durable_copy``
   does) into another folder, and the ingest/floor ratio;
3. the CLI: ``kbwatch ingest --root R`` as a subprocess (wall time including
   interpreter start and imports), and the bare start-up cost of the CLI;
4. scaling: per-file cost of ingesting a ``--batch`` of new files into a
   project that already holds ``--existing`` documents vs into an empty
   project. The big project is built once through the real pipeline (in
   batches, timed: its per-file cost per batch is printed as a growth curve),
   then copied afresh for every repeat so each measurement starts from the
   same state.

Targets (issue 2): >= 200 files/s; per-file cost with 10,000 documents
<= 1.5x the cost in an empty project. ``--profile`` adds a cProfile of one
in-process ingest into the big project and of one into an empty project.

    python bench/ingest_text.py                  # full run (several minutes)
    python bench/ingest_text.py --quick          # < 60 s, smaller sizes
    python bench/ingest_text.py --files 2000 --existing 10000 --batch 500 --repeat 3 --profile

Timings are printed, never asserted. The machine is shared: read the spread.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROJECT = "bench"
CLI = "run.py"

# --------------------------------------------------------------------------
# realistic text
# --------------------------------------------------------------------------

EN = [
    "The quarterly review covers revenue, hiring and the migration of the billing service.",
    "Each team lead should confirm the release dates before Friday so the schedule can be frozen.",
    "We measured a median latency of 42 ms on the staging cluster after the cache change.",
    "The supplier agreed to extend the warranty to 36 months for all units shipped this year.",
    "Open questions are tracked in the issue board; anything older than two weeks is escalated.",
    "Customer interviews showed that onboarding takes too long for teams larger than twenty people.",
    "The backup job runs at 02:00 and keeps thirty daily and twelve monthly snapshots.",
    "Please read the safety instructions in section 4 before operating the equipment.",
    "The design keeps every document as a plain file so that the index can be rebuilt at any time.",
    "Budget for the next phase is capped at 1.2 million, including contingency.",
    "A short glossary at the end explains the abbreviations used throughout this report.",
    "Meeting notes: attendees agreed to postpone the vendor decision until the pilot ends.",
    "The test plan covers upgrade, rollback, and data migration for every supported version.",
    "Risks include the late delivery of hardware and the availability of two key engineers.",
]
ZH = [
    "本季度的重点工作是完成计费系统的迁移，并保证对现有客户无感知。",
    "项目组在周五之前确认各模块的发布时间，以便冻结整体计划。",
    "测试环境中缓存改造后的中位延迟为四十二毫秒，较上月下降明显。",
    "供应商同意将今年发货设备的保修期延长至三十六个月。",
    "未解决的问题记录在问题看板中，超过两周未处理的需要升级。",
    "用户访谈表明，超过二十人的团队在入职流程上花费的时间过长。",
    "备份任务每天凌晨两点执行，保留三十个每日快照和十二个每月快照。",
    "操作设备前，请先阅读第四节中的安全说明。",
    "所有文档都以普通文件保存，索引可以随时重建。",
    "下一阶段的预算上限为一百二十万元，其中包括不可预见费用。",
    "会议纪要：与会人员同意在试点结束后再决定供应商。",
    "测试计划覆盖每个受支持版本的升级、回滚和数据迁移。",
    "主要风险包括硬件延迟交付以及两名关键工程师的人员安排。",
    "附录中的术语表解释了本报告中使用的缩写。",
]
EN_HEAD = ["Overview", "Background", "Decisions", "Action items", "Results", "Next steps", "Appendix"]
ZH_HEAD = ["概述", "背景", "决定事项", "待办事项", "结果", "下一步计划", "附录"]
ZH_NAMES = ["会议纪要", "技术方案", "需求文档", "周报", "测试报告", "操作手册"]


def make_doc(rng: random.Random, i: int) -> str:
    zh = rng.random() < 0.35
    sents, heads = (ZH, ZH_HEAD) if zh else (EN, EN_HEAD)
    target = int(rng.triangular(300, 2048, 700))
    title = f"{rng.choice(ZH_NAMES)} {i}" if zh else f"Document {i}: {rng.choice(EN_HEAD).lower()}"
    parts = [f"# {title}", ""]
    while len("\n".join(parts).encode("utf-8")) < target:
        kind = rng.random()
        if kind < 0.15:
            parts += [f"## {rng.choice(heads)}", ""]
        elif kind < 0.30:
            parts += [f"- {rng.choice(sents)}" for _ in range(rng.randint(2, 4))] + [""]
        elif kind < 0.35:
            parts += ["| item | owner | due |", "|---|---|---|",
                      f"| {rng.choice(heads)} | {rng.choice(['Ana', '李雷', 'Bo', '韩梅梅'])} | 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} |", ""]
        else:
            parts += [" ".join(rng.choice(sents) for _ in range(rng.randint(1, 3))), ""]
    text = "\n".join(parts)
    raw = text.encode("utf-8")
    if len(raw) > 2048:  # trim to ~2 KB on a character boundary
        text = raw[:2048].decode("utf-8", "ignore").rsplit("\n", 1)[0] + "\n"
    return text


def write_docs(folder: Path, n: int, seed: int, prefix: str = "") -> int:
    """Write ``n`` Markdown files under ``folder``; returns total bytes."""
    rng = random.Random(seed)
    total = 0
    for i in range(n):
        text = make_doc(rng, i)
        if rng.random() < 0.2:
            name = f"{prefix}{rng.choice(ZH_NAMES)}-{seed}-{i:05d}.md"
        else:
            name = f"{prefix}doc-{seed}-{i:05d}.md"
        sub = ["", "", "", "", "notes/", "reports/2026/"][i % 6]
        path = folder / sub / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        total += len(data)
    return total


def source_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


# --------------------------------------------------------------------------
# kbwatch helpers
# --------------------------------------------------------------------------

def kb_cmd() -> list[str]:
    """The CLI of *this* checkout: ``python run.py`` (the same CLI as ``kbwatch``).

    ``kbwatch`` on PATH may be an editable install of another checkout, so the
    script always runs ``run.py`` next to it; ``--cli kbwatch`` uses PATH.
    """
    if CLI == "kbwatch" and shutil.which("kbwatch"):
        return [shutil.which("kbwatch")]
    return [sys.executable, str(REPO / "run.py")]


def init_root(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(kb_cmd() + ["init", PROJECT, "--root", str(root)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return root / PROJECT


class ThreadProfile:
    """cProfile of the calling thread *and* every thread started while active.

    The runner does its work in its own threads, which a plain
    ``cProfile.Profile().enable()`` in the main thread does not see.
    """

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _start_in_thread(self, *_args) -> None:
        p = cProfile.Profile()
        self.profiles.append(p)
        p.enable()

    def enable(self) -> None:
        threading.setprofile(self._start_in_thread)
        self._start_in_thread()

    def disable(self) -> None:
        threading.setprofile(None)
        for p in self.profiles:
            p.disable()

    def stats(self, stream) -> pstats.Stats:
        st = pstats.Stats(self.profiles[0], stream=stream)
        for p in self.profiles[1:]:
            st.add(p)
        return st


def ingest_inprocess(root: Path, profile: ThreadProfile | None = None) -> dict:
    """One in-process ``run_ingest``; returns timings and totals."""
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    t0 = time.perf_counter()
    kb = KnowledgeBase(root)
    # as the CLI does with -q: stderr quiet, the DEBUG log file under .kbwatch/logs kept
    setup_logging(kb.settings, kb.state, quiet=True)
    kb.plugins, kb.journal  # noqa: B018 - open them outside the timed part
    t1 = time.perf_counter()
    if profile is not None:
        profile.enable()
    totals, _ = run_ingest(kb, [])
    if profile is not None:
        profile.disable()
    t2 = time.perf_counter()
    kb.close()
    return {"open": t1 - t0, "ingest": t2 - t1, "totals": totals}


def check_totals(totals: dict, n: int, what: str) -> None:
    if totals.get("done", 0) != n:
        print(f"  !! {what}: expected {n} done, got {totals}", file=sys.stderr)


# --------------------------------------------------------------------------
# floor: read + sha256 + durable copy
# --------------------------------------------------------------------------

def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def floor_copy(files: list[Path], src_root: Path, dst_root: Path, fsync: bool = True) -> float:
    t0 = time.perf_counter()
    for f in files:
        data = f.read_bytes()
        hashlib.sha256(data).hexdigest()
        dst = dst_root / f.relative_to(src_root)
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        shutil.copystat(f, tmp)
        os.replace(tmp, dst)
        if fsync:
            fsync_dir(dst.parent)
    return time.perf_counter() - t0


# --------------------------------------------------------------------------
# stats and printing
# --------------------------------------------------------------------------

def summary(values: list[float]) -> dict:
    best, med, worst = min(values), statistics.median(values), max(values)
    spread = (worst - best) / best * 100 if best else 0.0
    return {"best": best, "median": med, "worst": worst, "spread_pct": spread, "all": values}


def fmt_all(values: list[float], unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    return ", ".join(f"{v * scale:.{digits}f}" for v in values) + f" {unit}"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def print_profile(prof: ThreadProfile, title: str, top: int) -> str:
    s = io.StringIO()
    prof.stats(s).strip_dirs().sort_stats("cumulative").print_stats(top)
    s2 = io.StringIO()
    prof.stats(s2).strip_dirs().sort_stats("tottime").print_stats(top)
    text = (f"\n=== cProfile: {title}, all threads (by cumulative; waits in the main and runner threads "
            f"overlap) ===\n" + _trim(s.getvalue()) +
            f"\n=== cProfile: {title}, all threads (by own time) ===\n" + _trim(s2.getvalue()))
    print(text)
    return text


def _trim(text: str) -> str:
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.strip().startswith("ncalls"):
            return "\n".join(lines[i:])
    return text


# --------------------------------------------------------------------------
# the benchmark parts
# --------------------------------------------------------------------------

def bench_throughput(args, work: Path) -> dict:
    print(f"\n## 1. throughput: {args.files} Markdown files, {args.repeat} repeat(s)")
    ingest_t, open_t, floor_t, floor_nf_t, cli_t = [], [], [], [], []
    nbytes = 0
    for r in range(args.repeat):
        root = work / f"tp{r}"
        proj = init_root(root)
        nbytes = write_docs(proj / "sources", args.files, seed=1000 + r)
        files = source_files(proj / "sources")
        # floor first (the ingest removes the sources); both see a warm page cache
        floor_t.append(floor_copy(files, proj / "sources", work / f"floor{r}"))
        floor_nf_t.append(floor_copy(files, proj / "sources", work / f"floornf{r}", fsync=False))
        res = ingest_inprocess(root)
        check_totals(res["totals"], args.files, "in-process ingest")
        ingest_t.append(res["ingest"])
        open_t.append(res["open"])
        left = len(source_files(proj / "sources"))
        print(f"  repeat {r + 1}: ingest {res['ingest']:.2f} s ({args.files / res['ingest']:.0f} files/s), "
              f"open {res['open'] * 1000:.0f} ms, floor {floor_t[-1]:.2f} s "
              f"(no fsync {floor_nf_t[-1]:.2f} s), left in sources/: {left}")
        if not args.no_cli:
            croot = work / f"cli{r}"
            cproj = init_root(croot)
            write_docs(cproj / "sources", args.files, seed=2000 + r)
            t0 = time.perf_counter()
            p = subprocess.run(kb_cmd() + ["ingest", "--no-progress", "--root", str(croot)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            cli_t.append(time.perf_counter() - t0)
            print(f"  repeat {r + 1}: CLI ingest {cli_t[-1]:.2f} s ({args.files / cli_t[-1]:.0f} files/s) "
                  f"exit {p.returncode}: {p.stdout.strip()}")
            shutil.rmtree(croot, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work / f"floor{r}", ignore_errors=True)
        shutil.rmtree(work / f"floornf{r}", ignore_errors=True)
    startup = []
    if not args.no_cli:
        for _ in range(max(3, args.repeat)):
            t0 = time.perf_counter()
            subprocess.run(kb_cmd() + ["plugins", "--root", str(work)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            startup.append(time.perf_counter() - t0)
    out = {"files": args.files, "bytes": nbytes, "ingest": summary(ingest_t), "open": summary(open_t),
           "floor": summary(floor_t), "floor_nofsync": summary(floor_nf_t),
           "cli": summary(cli_t) if cli_t else None, "startup": summary(startup) if startup else None}
    n = args.files
    rows = [
        ["in-process run_ingest", f"{n / out['ingest']['best']:.0f}", f"{n / out['ingest']['median']:.0f}",
         f"{out['ingest']['median'] / n * 1000:.2f}", f"{out['ingest']['spread_pct']:.0f}%"],
        ["floor: read+sha256+copy+fsync", f"{n / out['floor']['best']:.0f}", f"{n / out['floor']['median']:.0f}",
         f"{out['floor']['median'] / n * 1000:.2f}", f"{out['floor']['spread_pct']:.0f}%"],
        ["floor without fsync", f"{n / out['floor_nofsync']['best']:.0f}", f"{n / out['floor_nofsync']['median']:.0f}",
         f"{out['floor_nofsync']['median'] / n * 1000:.3f}", f"{out['floor_nofsync']['spread_pct']:.0f}%"],
    ]
    if out["cli"]:
        rows.insert(1, ["CLI `kbwatch ingest` (wall, incl. start)", f"{n / out['cli']['best']:.0f}",
                        f"{n / out['cli']['median']:.0f}", f"{out['cli']['median'] / n * 1000:.2f}",
                        f"{out['cli']['spread_pct']:.0f}%"])
    print()
    print(table(rows, ["path", "files/s best", "files/s median", "ms/file median", "spread"]))
    ratio = out["ingest"]["median"] / out["floor"]["median"]
    out["ratio_floor"] = ratio
    print(f"\n  ingest / floor (median): {ratio:.1f}x   ({nbytes / 1024:.0f} KiB in {n} files, "
          f"avg {nbytes / n:.0f} B)")
    if out["startup"]:
        print(f"  CLI start-up (`kbwatch plugins`, no work): median {out['startup']['median']:.2f} s "
              f"[{fmt_all(startup)}]")
    print(f"  KnowledgeBase open (settings+plugins+journal), not in the ingest time: "
          f"median {out['open']['median'] * 1000:.0f} ms")
    return out


def bench_fsync(args, work: Path) -> dict:
    """How this disk prices the pipeline's fsyncs: one by one, from 16 threads, or one syncfs()."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    libc = ctypes.CDLL(None, use_errno=True)
    n = min(300, args.files)

    def make(d: Path) -> list[Path]:
        d.mkdir(parents=True)
        paths = []
        for i in range(n):
            p = d / f"f{i}.md"
            p.write_bytes(os.urandom(1100))
            paths.append(p)
        return paths

    def fs(p: Path) -> None:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    seq, par, one = [], [], []
    print(f"\n## fsync cost on this disk: {n} files of 1.1 KB, {args.repeat} repeat(s)")
    for r in range(args.repeat):
        ps = make(work / f"fs-seq{r}")
        t = time.perf_counter()
        for p in ps:
            fs(p)
        seq.append((time.perf_counter() - t) / n)
        ps = make(work / f"fs-par{r}")
        t = time.perf_counter()
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(fs, ps))
        par.append((time.perf_counter() - t) / n)
        make(work / f"fs-one{r}")
        t = time.perf_counter()
        fd = os.open(work, os.O_RDONLY)
        try:
            libc.syncfs(fd)
        finally:
            os.close(fd)
        one.append(time.perf_counter() - t)
        print(f"  repeat {r + 1}: sequential fsync {seq[-1] * 1000:.2f} ms/file, 16 threads {par[-1] * 1000:.2f} ms/file, "
              f"one syncfs() {one[-1] * 1000:.0f} ms for all {n}")
    return {"n": n, "seq": summary(seq), "par": summary(par), "syncfs": summary(one)}


def build_big(args, work: Path) -> tuple[Path, list[dict]]:
    """A root whose project holds ``--existing`` documents, built through the pipeline."""
    root = work / "big-template"
    proj = init_root(root)
    step = min(args.build_batch, args.existing)
    curve = []
    done = 0
    t_all = time.perf_counter()
    print(f"\n## building a project with {args.existing} documents through the pipeline "
          f"(batches of {step})")
    while done < args.existing:
        n = min(step, args.existing - done)
        write_docs(proj / "sources", n, seed=50_000 + done, prefix="old-")
        res = ingest_inprocess(root)
        check_totals(res["totals"], n, "build batch")
        curve.append({"before": done, "n": n, "s": res["ingest"]})
        print(f"  docs {done:>6} -> {done + n:>6}: {res['ingest']:.2f} s, "
              f"{res['ingest'] / n * 1000:.2f} ms/file, {n / res['ingest']:.0f} files/s")
        done += n
    print(f"  built in {time.perf_counter() - t_all:.1f} s "
          f"(manifest.json {os.path.getsize(proj / 'manifest.json') / 1e6:.1f} MB, "
          f"project.md {os.path.getsize(proj / 'project.md') / 1e6:.1f} MB)")
    return root, curve


def bench_scaling(args, work: Path) -> dict:
    big, curve = build_big(args, work)
    print(f"\n## 2. scaling: batch of {args.batch} new files, empty project vs {args.existing} documents, "
          f"{args.repeat} repeat(s)")
    empty_t, big_t, copy_t = [], [], []
    profiles = {}

    def timed_batch(root: Path, r: int, key: str) -> float:
        """Ingest a batch of new files into ``root``; its time (profiled on the first repeat)."""
        write_docs(root / PROJECT / "sources", args.batch, seed=9000 + r, prefix="new-")
        prof = ThreadProfile() if (args.profile and r == 0) else None
        res = ingest_inprocess(root, prof)
        check_totals(res["totals"], args.batch, f"{key} batch")
        if prof:
            profiles[key] = prof
        shutil.rmtree(root, ignore_errors=True)
        return res["ingest"]

    for r in range(args.repeat):
        root = work / f"empty{r}"
        init_root(root)
        empty_t.append(timed_batch(root, r, "empty"))
        root = work / f"big{r}"  # a fresh copy of the big project
        t0 = time.perf_counter()
        shutil.copytree(big, root, symlinks=True)
        copy_t.append(time.perf_counter() - t0)
        big_t.append(timed_batch(root, r, "big"))
        print(f"  repeat {r + 1}: empty {empty_t[-1] / args.batch * 1000:.2f} ms/file, "
              f"{args.existing} docs {big_t[-1] / args.batch * 1000:.2f} ms/file "
              f"(template copy {copy_t[-1]:.1f} s, not timed)")
    e, b = summary(empty_t), summary(big_t)
    n = args.batch
    rows = [
        ["empty project", f"{e['best'] / n * 1000:.2f}", f"{e['median'] / n * 1000:.2f}", f"{e['spread_pct']:.0f}%",
         fmt_all(empty_t, "ms/file", 1000 / n)],
        [f"{args.existing} documents", f"{b['best'] / n * 1000:.2f}", f"{b['median'] / n * 1000:.2f}",
         f"{b['spread_pct']:.0f}%", fmt_all(big_t, "ms/file", 1000 / n)],
    ]
    print()
    print(table(rows, ["project", "ms/file best", "ms/file median", "spread", "all repeats"]))
    ratio = b["median"] / e["median"]
    print(f"\n  per-file cost ratio ({args.existing} docs / empty), median: {ratio:.2f}x  "
          f"(best/best {b['best'] / e['best']:.2f}x)   target <= 1.5x")
    prof_text = ""
    if profiles:
        for key in ("empty", "big"):
            if key in profiles:
                prof_text += print_profile(profiles[key], f"ingest {n} files into the {key} project", args.top)
    shutil.rmtree(big, ignore_errors=True)
    return {"empty": e, "big": b, "ratio": ratio, "curve": curve, "batch": n, "existing": args.existing,
            "profile": prof_text}


def markdown(args, tp: dict | None, sc: dict | None) -> str:
    out = ["### Ingest of small Markdown files (bench/ingest_text.py)", ""]
    out.append(f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
               f"{args.repeat} repeat(s), medians (best in brackets); spread = (worst-best)/best.")
    out.append("")
    if tp:
        n = tp["files"]
        out += ["| measure | value | target |", "|---|---|---|"]
        ok = n / tp["ingest"]["median"] >= 200
        out.append(f"| in-process ingest, {n} files | {n / tp['ingest']['median']:.0f} files/s "
                   f"({n / tp['ingest']['best']:.0f}), spread {tp['ingest']['spread_pct']:.0f}% | "
                   f">= 200 files/s {'**met**' if ok else '**missed**'} |")
        if tp["cli"]:
            out.append(f"| CLI `kbwatch ingest` wall, incl. start | {n / tp['cli']['median']:.0f} files/s "
                       f"({tp['cli']['median']:.2f} s) | |")
        if tp["startup"]:
            out.append(f"| CLI start-up alone | {tp['startup']['median']:.2f} s | |")
        out.append(f"| floor: read+sha256+copy+fsync | {n / tp['floor']['median']:.0f} files/s "
                   f"({tp['floor']['median'] / n * 1000:.2f} ms/file) | |")
        out.append(f"| floor without fsync | {n / tp['floor_nofsync']['median']:.0f} files/s | |")
        out.append(f"| ingest / floor | {tp['ratio_floor']:.1f}x | |")
    if sc:
        n = sc["batch"]
        ok = sc["ratio"] <= 1.5
        if not tp:
            out += ["| measure | value | target |", "|---|---|---|"]
        out.append(f"| {n} new files into an empty project | {sc['empty']['median'] / n * 1000:.2f} ms/file "
                   f"(spread {sc['empty']['spread_pct']:.0f}%) | |")
        out.append(f"| {n} new files into {sc['existing']} docs | {sc['big']['median'] / n * 1000:.2f} ms/file "
                   f"(spread {sc['big']['spread_pct']:.0f}%) | |")
        out.append(f"| ratio | {sc['ratio']:.2f}x | <= 1.5x {'**met**' if ok else '**missed**'} |")
        curve = sc["curve"]
        if curve:
            out.append("")
            out.append("Building the big project through the pipeline (ms/file per batch): " + ", ".join(
                f"{c['before']}→{c['before'] + c['n']}: {c['s'] / c['n'] * 1000:.1f}" for c in curve) +
                f"; total {sum(c['s'] for c in curve):.0f} s.")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000, help="files in the throughput run (default 2000)")
    ap.add_argument("--existing", type=int, default=10000, help="documents already in the big project (default 10000)")
    ap.add_argument("--batch", type=int, default=500, help="new files ingested in the scaling check (default 500)")
    ap.add_argument("--build-batch", type=int, default=2000, help="batch size used to build the big project")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of every measurement (default 3)")
    ap.add_argument("--quick", action="store_true", help="small sizes, finishes in < 60 s")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess runs")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling check")
    ap.add_argument("--no-throughput", action="store_true", help="skip the throughput run")
    ap.add_argument("--profile", action="store_true", help="cProfile one scaling batch (empty and big)")
    ap.add_argument("--fsync-check", action="store_true",
                    help="also price fsync on this disk: sequential vs 16 threads vs one syncfs()")
    ap.add_argument("--top", type=int, default=25, help="rows of each profile printed")
    ap.add_argument("--workdir", type=Path, default=None, help="where temp roots go (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temp directory")
    ap.add_argument("--cli", choices=["run.py", "kbwatch"], default="run.py",
                    help="CLI used for init and the CLI timing (default: run.py of this checkout)")
    args = ap.parse_args()
    global CLI
    CLI = args.cli
    if args.quick:
        args.files, args.existing, args.batch, args.build_batch = 250, 1000, 100, 500
        args.repeat = min(args.repeat, 2)
    os.environ.setdefault("DO_NOT_TRACK", "1")
    work = Path(tempfile.mkdtemp(prefix="kbwatch-bench-ingest-", dir=args.workdir))
    print(f"kbwatch ingest benchmark: {os.cpu_count()} cores, Python {sys.version.split()[0]}, work dir {work}")
    print(f"sizes: files={args.files} existing={args.existing} batch={args.batch} repeat={args.repeat}"
          + (" (quick)" if args.quick else ""))
    t0 = time.perf_counter()
    tp = sc = fsx = None
    try:
        if not args.no_throughput:
            tp = bench_throughput(args, work)
        if args.fsync_check:
            fsx = bench_fsync(args, work)
        if not args.no_scaling:
            sc = bench_scaling(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n(total benchmark time {time.perf_counter() - t0:.0f} s)\n")
    print(markdown(args, tp, sc))
    if fsx:
        print(f"\nfsync on this disk ({fsx['n']} files, medians): sequential {fsx['seq']['median'] * 1000:.2f} ms/file, "
              f"16 threads {fsx['par']['median'] * 1000:.2f} ms/file, one syncfs() {fsx['syncfs']['median'] * 1000:.0f} ms in all.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
