#!/usr/bin/env python3
"""Build ``bench/data/secrets-credsweeper.jsonl``: an independent secrets test set.

Source: Samsung/CredSweeper (GitHub, MIT licence, Copyright (c) 2021 SAMSUNG), its test
samples ``tests/samples/*`` and the expected report ``tests/data/output.json`` (the
findings CredSweeper's maintainers accept from their default, ML-filtered run). Neither
gitleaks nor detect-secrets (the sources of ``../shared/bench-data/risk``) is involved.

- label 1: each distinct line of a sample file that ``output.json`` reports, for rules that name
  a credential (not ``UUID``, ``Salt``, ``Nonce``, ``Firebase Domain``, ``AWS S3 Bucket``, app ids);
- label 0: each distinct line that CredSweeper's raw rules report (``tests/data/no_filters_no_ml.json``)
  but its filters and ML model reject (absent from ``output.json``): hard negatives chosen by the
  tool's maintainers; and each distinct non-empty line of the negative sample files (``*_n``,
  ``*_n.*``, ``*_fp``) that ``output.json`` does not report.

Usage: ``python bench/build_secrets_independent.py GIT_DIR COMMIT`` (GIT_DIR: a clone or the
``fetch`` mirror of github.com/Samsung/CredSweeper). Each record carries ``source``
(``CredSweeper@<commit>:<path>``), ``subtype`` (``credsweeper:<rule>`` or ``credsweeper-n:<file>``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "secrets-credsweeper.jsonl"
# PEM/JWK rows are single lines cut out of multi-line key blocks: not judgeable line by line
NOT_CREDENTIALS = {"PEM Private Key", "BASE64 encoded PEM Private Key", "JSON Web Key", "UUID", "Salt", "Nonce", "Firebase Domain", "AWS S3 Bucket", "Tencent WeChat API App ID",
                   "AWS Client ID", "Google Multi", "AWS Multi", "Alibaba Multi"}
NEGATIVE = re.compile(r"(?:_n(?:\.\w+)?|_fp)$")


def show(git: str, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git, "show", f"{commit}:{path}"], capture_output=True, check=True).stdout


def main(argv: list[str]) -> int:
    git, commit = argv[1], argv[2]
    report = json.loads(show(git, commit, "tests/data/output.json"))
    rows, seen = [], set()
    reported: dict[str, set[int]] = {}
    for item in report:
        for ld in item["line_data_list"]:
            path = ld["path"].lstrip("./")
            reported.setdefault(path, set()).add(ld["line_num"])
            if item["rule"] in NOT_CREDENTIALS:
                continue
            line = ld["line"].strip()
            if not line or line in seen or len(line) > 2000:
                continue
            seen.add(line)
            rows.append({"id": f"credsweeper:{path.rsplit('/', 1)[-1]}:{ld['line_num']}", "text": line, "label": 1,
                         "kind": "secret", "lang": "en", "source": f"Samsung/CredSweeper@{commit[:7]}:{path}",
                         "subtype": f"credsweeper:{item['rule']}"})
    positive_lines = set(seen)
    for item in json.loads(show(git, commit, "tests/data/no_filters_no_ml.json")):
        for ld in item["line_data_list"]:
            path = ld["path"].lstrip("./")
            line = ld["line"].strip()
            if not line or line in seen or ld["line_num"] in reported.get(path, ()) or len(line) > 2000:
                continue
            seen.add(line)
            rows.append({"id": f"credsweeper-raw:{path.rsplit('/', 1)[-1]}:{ld['line_num']}", "text": line, "label": 0,
                         "kind": "benign", "lang": "en", "source": f"Samsung/CredSweeper@{commit[:7]}:{path}",
                         "subtype": f"credsweeper-rejected:{item['rule']}"})
    del positive_lines
    files = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "--name-only", commit, "tests/samples"],
                           capture_output=True, text=True, check=True).stdout.split()
    for path in files:
        if not NEGATIVE.search(path.rsplit("/", 1)[-1]):
            continue
        try:
            text = show(git, commit, path).decode("utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or n in reported.get(path, ()) or line in seen:
                continue
            seen.add(line)
            rows.append({"id": f"credsweeper-n:{path.rsplit('/', 1)[-1]}:{n}", "text": line, "label": 0, "kind": "benign",
                         "lang": "en", "source": f"Samsung/CredSweeper@{commit[:7]}:{path}",
                         "subtype": f"credsweeper-n:{path.rsplit('/', 1)[-1]}"})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    pos = sum(r["label"] for r in rows)
    print(f"{len(rows)} records ({pos} positive, {len(rows) - pos} negative) written to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
