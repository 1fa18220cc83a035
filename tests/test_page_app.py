"""The status page's application in process (Starlette's TestClient, no service, no browser):
labels follow ``[project] language``, the live-update fragment, the login and CSRF
flow of the forms, and reads behind the login when the page is not on loopback."""

from __future__ import annotations

import pytest

from conftest import ingest

pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install httpx)")


@pytest.fixture
def make_client(root, cli):
    from starlette.testclient import TestClient

    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.web import page_kb
    from kbwatch.pipeline.web.app import create_app
    from kbwatch.pipeline.web.auth import Guard, load_token

    opened = []

    def make(language: str = "zh", open_reads: bool = True):
        (root / "kbwatch.toml").write_text(f'[project]\nlanguage = "{language}"\n', encoding="utf-8")
        if not (root / "docs").exists():
            assert cli("init", "docs").exit_code == 0
            (root / "docs" / "sources" / "bad.xyz").write_text("?", encoding="utf-8")
            ingest(root)
        kb = page_kb(KnowledgeBase(root))
        opened.append(kb)
        token = load_token(kb.state, create=True)
        return TestClient(create_app(kb, Guard(token), open_reads=open_reads), follow_redirects=False), token

    yield make
    for kb in opened:
        kb.close()


def test_labels_follow_the_project_language(make_client):
    client, _ = make_client("zh")
    html = client.get("/").text
    assert '<html lang="zh-CN">' in html and "失败的文件" in html and "unsupported file type" in html
    client, _ = make_client("en")
    html = client.get("/").text
    assert "Failures" in html and "失败的文件" not in html


def test_live_update_fragment_is_the_main_part_only(make_client):
    client, _ = make_client("en")
    whole = client.get("/runs?outcome=failed").text
    part = client.get("/runs?outcome=failed", headers={"X-Partial": "1"}).text
    assert "<html" in whole and "setInterval" in whole
    assert "<html" not in part and "<header" not in part and "sources/bad.xyz" in part


def test_form_retry_needs_login_and_csrf(make_client, root):
    client, token = make_client("en")
    run_id = client.get("/api/runs?outcome=failed").json()[0]["run_id"]
    form = {"project": "docs", "ids": run_id, "next": "/runs"}
    assert client.post("/api/runs/retry", data=form).status_code == 401
    assert client.post("/login", data={"token": "nope", "next": "/"}).status_code == 401
    logged = client.post("/login", data={"token": token, "next": "/runs"})
    assert logged.status_code == 303 and logged.headers["location"] == "/runs"
    assert client.post("/api/runs/retry", data=form).status_code == 403  # cookie without the CSRF value
    page = client.get("/").text
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    done = client.post("/api/runs/retry", data={**form, "csrf": csrf, "next": "https://evil.example/"})
    assert done.status_code == 303 and done.headers["location"] == "/"  # only local redirects
    import sqlite3

    db = sqlite3.connect(root / ".kbwatch" / "journal.sqlite3")
    assert db.execute("select retryable, attempts from runs where run_id = ?", [run_id]).fetchone() == (1, 0)
    db.close()  # the run is due again: the next ingest (or the service within 2 s) takes it
    assert client.post("/api/runs/retry", json={"project": "docs", "ids": [run_id]},
                       headers={"X-CSRF-Token": csrf}).json()["retried"] == [run_id]


def test_off_loopback_reads_need_the_login_too(make_client):
    client, token = make_client("en", open_reads=False)
    assert client.get("/").status_code == 303 and client.get("/").headers["location"].startswith("/login")
    assert client.get("/api/status").status_code == 401
    assert client.get("/api/status", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_the_page_follows_a_journal_the_service_put_back(make_client, root):
    """The state guard replaces a deleted journal file; the page's own connection follows it."""
    import shutil
    import sqlite3

    client, _ = make_client("en")
    assert "sources/bad.xyz" in client.get("/runs").text
    path = root / ".kbwatch" / "journal.sqlite3"
    copy = path.with_name("copy.sqlite3")
    src = sqlite3.connect(path)
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.execute("update runs set source = 'sources/put-back.xyz'")
    dst.commit()
    dst.close()
    path.unlink()
    shutil.move(copy, path)  # as restore_file does: a new file at the path
    html = client.get("/runs").text
    assert "sources/put-back.xyz" in html and "sources/bad.xyz" not in html
