"""Parser for rich formats through ``unstructured`` (offline, explicit partitioners).

Owns .docx .odt .rtf .epub .html .htm .eml .msg, and .doc .ppt when
LibreOffice's ``soffice`` is on PATH (else ``failed: missing program``).
Each extension calls its own partitioner (``partition_docx``,
``partition_html``...) — never ``partition()`` with ``auto``/``hi_res`` — after
:func:`kbwatch.plugins.parsing.offline.ensure_offline`. Elements are rendered by
:mod:`kbwatch.plugins.parsing.rendering`.

- .docx/.odt/.epub: ZIP container checked first (zip bomb, DTD/entities,
  encrypted OLE under an OOXML name → ``encrypted``).
- .html/.htm: bytes decoded here (BOM / UTF-8 / GBK / Big5...) and passed as
  text, so the page's encoding never garbles the result.
- .eml/.msg: ``process_attachments=False``; From/To/Cc/Subject/Date at the top,
  attachment names listed (not parsed).
- .rtf/.odt/.epub need pandoc (``pypandoc-binary`` ships it).
- A .ppt (or .doc) that is really a ZIP file: a .ppt is handed to whichever parser
  takes .pptx (``raise ParseAs(".pptx")``: the core dispatches it), a .doc is read as .docx.
- A file name near the 255-byte limit is handed to the partitioner as a copy
  named ``document<ext>``: LibreOffice and pandoc write ``<stem>.docx`` next to
  a conversion, which would not fit.
"""

from __future__ import annotations

import email
import io
import email.policy
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import PermanentError, StageError, TransientError
from kbwatch.pipeline.model import ParsedDocument, ParserInfo
from kbwatch.pipeline.parsing import ParseAs

from kbwatch.plugins.parsing.common import OLE_MAGIC, ZIP_MAGIC, check_zip_container, decode_bytes, head
from kbwatch.plugins.parsing.partitioners import partitioner, warm_up

ZIPPED = {".docx": "docx", ".odt": "odt", ".epub": "epub"}
PANDOC = (".odt", ".rtf", ".epub")
LEGACY = {".doc": "doc", ".ppt": "ppt"}
EXTENSIONS = (".docx", ".odt", ".rtf", ".epub", ".html", ".htm", ".eml", ".msg") + tuple(LEGACY)


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="unstructured",
            extensions=EXTENSIONS,
            priority=100,
            description="unstructured (offline shim, explicit partitioners): docx odt rtf epub html eml msg; "
            "doc/ppt need LibreOffice",
        )
    ]


def _preflight(path: Path, ext: str, settings) -> None:
    if ext in ZIPPED:
        check_zip_container(path, settings, ZIPPED[ext])
    if ext in PANDOC:
        try:
            import pypandoc

            pypandoc.get_pandoc_path()
        except (ImportError, OSError) as exc:
            raise PermanentError(f"{ext} needs pandoc (install pypandoc-binary): {exc}", reason="missing program")
    if ext in LEGACY or ext == ".msg":
        if head(path) != OLE_MAGIC:
            raise PermanentError(f"{path.name} is not a valid {ext} file (not an OLE2 container)", reason="corrupt")
    if ext in LEGACY:
        try:
            import msoffcrypto

            with open(path, "rb") as fh:
                if msoffcrypto.OfficeFile(fh).is_encrypted():
                    raise PermanentError(f"{path.name} is password-protected", reason="encrypted")
        except PermanentError:
            raise
        except Exception:
            pass  # msoffcrypto cannot tell: let LibreOffice try
        if not (shutil.which("soffice") or shutil.which("libreoffice")):
            raise PermanentError(
                f"{ext} files need LibreOffice (the 'soffice' program), which is not installed; "
                "install libreoffice or save the file as "
                + {".doc": ".docx", ".ppt": ".pptx"}[ext],
                reason="missing program",
            )


@hookimpl
def kb_worker_preload(settings):
    """Forked workers inherit unstructured already imported and warmed."""
    return ["kbwatch.plugins.parsing.warm"]


@hookimpl
def kb_worker_started(settings):
    """Pay unstructured's import and tokenizer set-up once per worker, not on its first file."""
    warm_up()


@hookimpl
def kb_parse(path, ext, settings):
    if ext in LEGACY:  # a new-format or RTF file saved under the old name
        magic = head(path, 8)
        if magic.startswith(ZIP_MAGIC) and ext == ".ppt":
            raise ParseAs(".pptx")  # the core hands it to the parser that takes .pptx
        if magic.startswith(ZIP_MAGIC):
            ext = ".docx"
        elif magic.startswith(b"{\\rtf"):
            ext = ".rtf"
    _preflight(path, ext, settings)

    from kbwatch.plugins.parsing import rendering
    from kbwatch.plugins.parsing.offline import ensure_offline

    ensure_offline()
    fn = partitioner(ext)
    kwargs: dict = {}
    if ext in (".html", ".htm"):
        text, _ = decode_bytes(path.read_bytes(), path.name)
        kwargs["text"] = text
    elif ext == ".eml" and b"\x00" in head(path, 4096):  # UTF-16/32 mail: decode, hand over UTF-8
        text, _ = decode_bytes(path.read_bytes(), path.name)
        kwargs["file"] = io.BytesIO(text.encode("utf-8", "surrogateescape"))
        kwargs["metadata_filename"] = path.name
    else:
        kwargs["filename"] = str(path)
    if ext in (".eml", ".msg"):
        kwargs["process_attachments"] = False
    if ext == ".docx":
        kwargs["include_page_breaks"] = True
    try:
        with _short_named(kwargs, ext):
            elements = fn(**kwargs)
    except StageError:
        raise
    except (PermissionError, BlockingIOError) as exc:
        raise TransientError(f"{path.name} could not be read: {exc}", reason="locked")
    except MemoryError:
        raise
    except Exception as exc:  # library failure on this file: it will fail again
        raise _classify(path, ext, exc)

    body, title, pages = rendering.render(elements)
    warnings: list[str] = []
    if ext in (".eml", ".msg"):
        header, subject, attachments = _email_header(path, ext, elements)
        title = subject or None
        if attachments:
            body += "\n**Attachments (not parsed):** " + ", ".join(attachments) + "\n"
            warnings.append(f"{len(attachments)} attachment(s) not parsed")
        body = header + "\n\n" + body if body.strip() else header + "\n"
    body = body.replace("\x00", "")
    if not body.strip():
        warnings.append("the document has no text")
    return ParsedDocument(
        markdown=body, parser="unstructured", title=title, locations="page" if pages else None, warnings=warnings
    )


CONVERSION_NAME_MAX = 200  # bytes: a converter adds its own extension to the stem


@contextmanager
def _short_named(kwargs: dict, ext: str):
    """Point ``kwargs["filename"]`` at a short-named copy while a long-named file is partitioned."""
    filename = kwargs.get("filename")
    if filename is None or len(Path(filename).name.encode("utf-8", "surrogateescape")) <= CONVERSION_NAME_MAX:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="kbwatch-name-") as tmp:
        short = Path(tmp) / f"document{ext}"
        shutil.copyfile(filename, short)
        kwargs["filename"] = str(short)
        kwargs.setdefault("metadata_filename", Path(filename).name)
        try:
            yield
        finally:
            kwargs["filename"] = filename


def _classify(path: Path, ext: str, exc: Exception) -> PermanentError:
    msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]  # one line (pandoc's run over several)
    low = msg.lower()
    if "out of memory" in low:  # pandoc's own heap limit, not a damaged file
        return PermanentError(f"{path.name}: the converter ran out of memory ({msg})", reason="memory")
    if "encrypt" in low or "password" in low:
        return PermanentError(f"{path.name} is password-protected ({msg})", reason="encrypted")
    if "pandoc" in low and ("not found" in low or "no pandoc" in low):
        return PermanentError(f"{ext} needs pandoc: {msg}", reason="missing program")
    if "soffice" in low or "libreoffice" in low:
        return PermanentError(f"{ext} conversion with LibreOffice failed: {msg}", reason="missing program")
    return PermanentError(f"{path.name} could not be parsed as {ext}: {msg}", reason="corrupt")


def _email_header(path: Path, ext: str, elements) -> tuple[str, str, list[str]]:
    """From/To/Cc/Subject/Date lines; stdlib headers for .eml, element metadata as fallback."""
    fields: dict[str, str] = {}
    attachments: list[str] = []
    if ext == ".eml":
        data = path.read_bytes()
        try:
            if b"\x00" in data[:4096]:
                msg = email.message_from_string(decode_bytes(data, path.name)[0], policy=email.policy.default)
            else:
                msg = email.message_from_bytes(data, policy=email.policy.default)
            for key in ("From", "To", "Cc", "Subject", "Date"):
                value = msg.get(key)
                if value:
                    fields[key] = " ".join(str(value).split())
            for part in msg.walk():
                name = part.get_filename()
                if name and part.get_content_disposition() in ("attachment", "inline"):
                    attachments.append(" ".join(str(name).split()))
        except Exception:
            fields = {}
    md = elements[0].metadata if elements else None
    if md is not None:
        for key, attr in (("From", "sent_from"), ("To", "sent_to"), ("Cc", "cc_recipient")):
            value = getattr(md, attr, None)
            if value and key not in fields:
                fields[key] = ", ".join(value)
        if getattr(md, "subject", None) and "Subject" not in fields:
            fields["Subject"] = md.subject
        if ext == ".msg" and getattr(md, "last_modified", None) and "Date" not in fields:
            fields["Date"] = md.last_modified
    if ext == ".msg" and not attachments:
        attachments = _msg_attachments(path)
    subject = fields.get("Subject", "")
    lines = [f"# {subject}", ""] if subject else []
    lines += [f"- **{k}:** {fields[k]}" for k in ("From", "To", "Cc", "Date") if fields.get(k)]
    if not subject and not lines:
        lines = ["*(no headers)*"]
    return "\n".join(lines).strip(), subject, attachments


def _msg_attachments(path: Path) -> list[str]:
    try:
        from oxmsg import Message

        msg = Message.load(str(path))
        return [a.file_name for a in msg.attachments if a.file_name]
    except Exception:
        return []
