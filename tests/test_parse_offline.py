"""Parsing needs no network: every format under `unshare -n`, no socket, no model download.

The child process records socket and subprocess audit events (sys.addaudithook),
parses one file of each family, and checks that unstructured runs on the offline
spaCy stand-in (plugins/parsing/offline.py) rather than a downloaded model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from _parse_util import FIXTURES, ROOT


def _unshare_ok() -> str | None:
    if not shutil.which("unshare"):
        return "unshare is not installed"
    try:
        r = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare failed: {exc}"
    return None if r.returncode == 0 else "unshare -n is not permitted here: " + r.stderr.decode(errors="replace").strip()


CHILD = textwrap.dedent(
    """
    import json, sys
    events = []
    def hook(name, args):
        # connects and name lookups; a bind to ::1 port 0 (urllib3's IPv6 probe) is local
        if name in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto",
                    "socket.sendmsg", "socket.gethostbyaddr"):
            events.append(name + " " + repr(args)[:120])
        if name == "subprocess.Popen":
            events.append("exec " + repr(args[1])[:120])
    sys.addaudithook(hook)
    sys.path[:0] = [{root!r}, {tests!r}]
    import _parse_util as u
    from pathlib import Path
    from kbwatch.plugins.parsing.offline import active_nlp_name, STAND_IN_MARKER
    out = {{}}
    for f in json.loads(sys.argv[1]):
        doc = u.parse(Path(f))
        out[Path(f).name] = doc.markdown[:2000]
    import os
    print(json.dumps({{"docs": out, "events": events, "nlp": active_nlp_name(),
                      "marker": STAND_IN_MARKER, "env": os.environ.get("DO_NOT_TRACK")}}))
    """
)


def test_all_formats_parse_without_network(tmp_path):
    reason = _unshare_ok()
    if reason:
        pytest.skip(reason)
    import docx
    import openpyxl
    from pptx import Presentation

    sys.path.insert(0, str(ROOT / "tests"))
    from _parse_util import cjk, make_pdf, text_line

    d = docx.Document()
    d.add_heading("离线标题", 1)
    d.add_paragraph("This sentence is classified by the offline tokenizer.")
    d.save(tmp_path / "a.docx")
    p = Presentation()
    s = p.slides.add_slide(p.slide_layouts[1])
    s.shapes.title.text = "幻灯片标题"
    s.placeholders[1].text = "要点"
    p.save(tmp_path / "a.pptx")
    wb = openpyxl.Workbook()
    wb.active.append(["键", "值"])
    wb.active.append(["a", 1])
    wb.save(tmp_path / "a.xlsx")
    (tmp_path / "a.pdf").write_bytes(make_pdf([text_line(72, 700, cjk("离线文本"), "F2")]))
    (tmp_path / "a.html").write_text("<h1>网页标题</h1><p>Some paragraph text is here.</p>", encoding="utf-8")
    (tmp_path / "a.txt").write_text("纯文本内容", encoding="utf-8")
    files = [tmp_path / n for n in ("a.docx", "a.pptx", "a.xlsx", "a.pdf", "a.html", "a.txt")]
    files += [FIXTURES / "fake-email-utf-16-le.eml", FIXTURES / "fake.odt", FIXTURES / "fake-email.msg"]
    from kbwatch.plugins.parsing.ocr import tesseract_langs

    ocr = "chi_sim" in tesseract_langs()
    if ocr:  # images are read by OCR, a local program
        files.append(FIXTURES / "chi_sim_image.jpeg")
    code = CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"))
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    r = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code, json.dumps([str(f) for f in files])],
        capture_output=True, text=True, timeout=240, env=env, cwd=str(tmp_path),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    docs = result["docs"]
    assert "# 离线标题" in docs["a.docx"] and "offline tokenizer" in docs["a.docx"]
    assert "## 幻灯片标题" in docs["a.pptx"]
    assert "| a | 1 |" in docs["a.xlsx"]
    assert "离线文本" in docs["a.pdf"]
    assert "# 网页标题" in docs["a.html"]
    assert "纯文本内容" in docs["a.txt"]
    assert "Roses are red" in docs["fake-email-utf-16-le.eml"]
    assert "Mon" in docs["fake.odt"] and "Test Email" in docs["fake-email.msg"]
    if ocr:
        assert "<!-- ocr: tesseract -->" in docs["chi_sim_image.jpeg"] and "甘草" in docs["chi_sim_image.jpeg"]
    assert result["nlp"] == result["marker"], "unstructured must use the offline spaCy stand-in"
    assert result["env"] == "1"
    assert not [e for e in result["events"] if e.startswith("socket.")], result["events"]
    assert not [e for e in result["events"] if "nvidia-smi" in e], result["events"]
