"""The status page's Starlette application: HTML views, the JSON API, login.

Views (work without JavaScript; a few lines of script refresh them every few
seconds): ``/`` projects and recent runs, ``/runs`` (``?project=&outcome=``),
``/reviews`` (``?project=``), ``/search`` (``?project=&q=``), ``/login``.
API: ``GET /api/status``, ``GET /api/runs``; writes ``POST /api/runs/retry``,
``POST /api/reviews/approve``, ``POST /api/reviews/reject`` with a JSON body
``{"project": ..., "ids": [...]}`` or ``{"project": ..., "all": true}`` (the
page's forms post the same fields form-encoded and are redirected back).

Access: reads are open when the page listens on loopback, else they need the
login too; writes always need the token (Bearer) or the login cookie plus the
CSRF value (see :mod:`kbwatch.pipeline.web.auth`). Handlers are plain
functions, which Starlette runs in its thread pool: a write waiting for a
project's lock never stalls the page.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from kbwatch.pipeline.errors import ConfigError, KbwatchError
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.web import data
from kbwatch.pipeline.web.auth import COOKIE, Guard
from kbwatch.pipeline.web.labels import labels_for

TEMPLATES = Path(__file__).parent / "templates"
MAX_BODY = 1 << 20


def _local_next(value: str | None, default: str = "/") -> str:
    """Where a form goes back to: a path on this site only."""
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return default


def create_app(kb, guard: Guard, open_reads: bool) -> Starlette:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    language = kb.settings["project"]["language"]
    words = labels_for(language)
    env.globals.update(t=words, lang=language)

    def logged_in(request: Request) -> bool:
        return guard.cookie_ok(request.cookies.get(COOKIE)) or guard.bearer_ok(request.headers.get("authorization"))

    def render(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        partial = request.headers.get("x-partial") == "1"
        html = env.get_template(name).render(
            request_path=request.url.path, query=str(request.url.query), partial=partial,
            logged_in=logged_in(request), csrf=guard.csrf if logged_in(request) else "",
            msg=request.query_params.get("msg", ""), here=_here(request), **context,
        )
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    def _here(request: Request) -> str:
        return request.url.path + (f"?{request.url.query}" if request.url.query else "")

    def read_gate(request: Request) -> Response | None:
        """None when the request may read; else a redirect to the login (or a 401 for the API)."""
        kb.journal.follow_replacement()  # the state guard put the journal back: read the new file
        if open_reads or logged_in(request):
            return None
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": "log in first: send Authorization: Bearer <token>"}, status_code=401)
        return RedirectResponse("/login?" + urlencode({"next": _here(request)}), status_code=303)

    # -- views -----------------------------------------------------------------
    def index(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        return render(request, "index.html", view="overview", live=True, data=data.overview(kb))

    def runs_view(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        project = request.query_params.get("project", "")
        outcome = request.query_params.get("outcome", "")
        return render(request, "runs.html", view="runs", live=True, project=project, outcome=outcome,
                      projects=data.project_names(kb), outcomes=data.OUTCOMES,
                      runs=data.runs(kb, project, outcome))

    def reviews_view(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        project = request.query_params.get("project", "")
        return render(request, "reviews.html", view="reviews", live=True, project=project,
                      projects=data.project_names(kb), findings=data.pending(kb, project))

    def search_view(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        projects = data.project_names(kb)
        project = request.query_params.get("project", "") or (projects[0] if projects else "")
        question = request.query_params.get("q", "").strip()
        result, error = None, ""
        if question and project:
            try:
                result = data.search(kb, project, question)
                if result is None:
                    error = "search is disabled: the ask or index plugin is not loaded"
            except KbwatchError as exc:
                error = str(exc)
        return render(request, "search.html", view="search", live=False, project=project, projects=projects,
                      question=question, result=result, error=error)

    # -- login -------------------------------------------------------------------
    def login_form(request: Request):
        return render(request, "login.html", view="login", live=False,
                      next=_local_next(request.query_params.get("next")), bad=False)

    async def login_post(request: Request):
        form = parse_qs((await request.body())[:MAX_BODY].decode("utf-8", "replace"))
        nxt = _local_next((form.get("next") or ["/"])[0])
        if not guard.token_ok((form.get("token") or [""])[0]):
            return render(request, "login.html", status=401, view="login", live=False, next=nxt, bad=True)
        response = RedirectResponse(nxt, status_code=303)
        response.set_cookie(COOKIE, guard.session, httponly=True, samesite="strict", path="/")
        return response

    def logout(request: Request):
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # -- API -----------------------------------------------------------------------
    def api_status(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        from kbwatch.pipeline.status import collect_status

        return JSONResponse(collect_status(kb)["public"])

    def api_runs(request: Request):
        if (gate := read_gate(request)) is not None:
            return gate
        rows = data.runs(kb, request.query_params.get("project", ""), request.query_params.get("outcome", ""))
        return JSONResponse([data.public_run(r) for r in rows])

    def write(action):
        async def endpoint(request: Request):
            raw = (await request.body())[:MAX_BODY]
            # the page's forms post form-encoded; a JSON body is JSON whatever its header says (curl -d)
            is_form = (request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
                       and not raw.lstrip().startswith(b"{"))
            if is_form:
                form = parse_qs(raw.decode("utf-8", "replace"))
                body = {"project": (form.get("project") or [""])[0], "ids": form.get("ids", []),
                        "all": (form.get("all") or [""])[0] in ("1", "true", "on")}
                csrf = (form.get("csrf") or [""])[0]
            else:
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                csrf = request.headers.get("x-csrf-token")
            # who may write
            if guard.bearer_ok(request.headers.get("authorization")):
                pass
            elif guard.cookie_ok(request.cookies.get(COOKIE)):
                if not guard.csrf_ok(csrf):
                    return _refuse(is_form, 403, "missing or wrong CSRF token")
            else:
                return _refuse(is_form, 401, "this needs the token: Authorization: Bearer <token> or log in")
            if not isinstance(body, dict) or not isinstance(body.get("ids", []), list):
                return _refuse(is_form, 400, 'expected {"project": ..., "ids": [...]} or {"project": ..., "all": true}')
            ids, everything = body.get("ids", []), body.get("all") is True
            if not ids and not everything:
                return _refuse(is_form, 400, 'give "ids" or "all": true')
            from starlette.concurrency import run_in_threadpool

            kb.journal.follow_replacement()
            try:
                result = await run_in_threadpool(action, body.get("project"), ids, everything)
            except data.NotFound as exc:
                return _refuse(is_form, 404, str(exc))
            except ConfigError as exc:
                return _refuse(is_form, 400, str(exc))
            logger.info("status page: {} {}", request.url.path, json.dumps(result, ensure_ascii=False))
            if is_form:
                form_next = _local_next((parse_qs(raw.decode("utf-8", "replace")).get("next") or ["/"])[0])
                return RedirectResponse(form_next, status_code=303)
            return JSONResponse(result)

        return endpoint

    def _refuse(is_form: bool, status: int, message: str) -> Response:
        if is_form:
            return HTMLResponse(env.get_template("refused.html").render(
                status=status, message=message, partial=False, logged_in=False, csrf="", msg="", view="",
                live=False, here="/", request_path="/", query=""), status_code=status)
        return JSONResponse({"error": message}, status_code=status)

    routes = [
        Route("/", index), Route("/runs", runs_view), Route("/reviews", reviews_view), Route("/search", search_view),
        Route("/login", login_form, methods=["GET"]), Route("/login", login_post, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/api/status", api_status), Route("/api/runs", api_runs),
        Route("/api/runs/retry", write(lambda p, ids, a: data.retry(kb, p, ids, a)), methods=["POST"]),
        Route("/api/reviews/approve", write(lambda p, ids, a: data.review(kb, p, ids, a, "approved")), methods=["POST"]),
        Route("/api/reviews/reject", write(lambda p, ids, a: data.review(kb, p, ids, a, "rejected")), methods=["POST"]),
    ]
    return Starlette(routes=routes)
