"""The artifact: a reference's rows, bound to one scope, whole or refused.

DESIGN
  One file of JSON lines (UTF-8, "\n" after every line):

    line 1      the header: {"format": "clink-reference-artifact", "version": 1,
                "scope": <the scope document, verbatim, as a string>,
                "fingerprint": <SHA-256 of scope.fingerprint_text(columns)>,
                "columns": [{"name", "type", "key"}], "status": "complete" | "incomplete",
                "incomplete": [reasons], "read": <the range reader's account>,
                "reference": {"implementation", "version", "configuration"}}
    lines 2..   one row each: a JSON array of canonical cells in column order (canonical.py)
    last line   the end: {"end": "clink-reference-artifact", "rows": N,
                "header_sha256": <hex over line 1's bytes without its "\n">,
                "rows_sha256": <hex over the row lines' bytes, each with its "\n">}

  The end line is written last, after every row, so a file without it is unfinished and is
  refused; the hashes show the file is whole as its writer finished it — not who wrote it, nor
  whether its implementation is independent of the job (integrity is not provenance: the
  audit reports `reference` as recorded, never as verified). An incomplete reference is
  written with its reasons and no rows, so it can be handed in and held unavailable, never
  compared. Rows are sorted by their canonical JSON so two runs of one reference over one
  scope write the same bytes.
"""

import hashlib
import json
import os

from .canonical import canonical_row
from .scope import Scope

__all__ = ["ArtifactError", "write_artifact", "read_artifact", "FORMAT", "VERSION"]

FORMAT = "clink-reference-artifact"
VERSION = 1


class ArtifactError(ValueError):
    """An artifact that cannot be read or is not whole, naming why."""


def _dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def write_artifact(path, scope, columns, rows, read=None, reference=None, incomplete=None):
    """Write the artifact of `rows` (Python values, in `columns` order) computed over `scope`.

    `read` is the RangeResult the rows were computed from: an incomplete one makes the
    artifact incomplete (its reasons kept, its rows dropped). `reference` describes the
    implementation ({"implementation", "version", "configuration"}): recorded, never verified.
    Written to a temporary name and renamed, so `path` is whole or absent.
    """
    if not isinstance(scope, Scope):
        scope = Scope(scope)
    cols = [{"name": c["name"], "type": c["type"], "key": bool(c.get("key"))} for c in columns]
    reasons = list(incomplete or [])
    if read is not None and not read.complete:
        reasons += read.reasons or ["the range reader did not finish"]
    if not scope.complete:
        reasons.append(f"the scope is {scope.doc.get('status')}")
    status = "incomplete" if reasons else "complete"
    lines = []
    if status == "complete":
        lines = sorted(_dumps(canonical_row(cols, list(r))) for r in rows)
    header = {
        "format": FORMAT, "version": VERSION, "scope": scope.text,
        "fingerprint": scope.fingerprint(cols), "columns": cols, "status": status,
        "incomplete": reasons, "read": read.describe() if read is not None else None,
        "reference": reference or {},
    }
    htext = _dumps(header)
    rows_hash = hashlib.sha256()
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(htext + "\n")
        for line in lines:
            f.write(line + "\n")
            rows_hash.update((line + "\n").encode("utf-8"))
        f.write(_dumps({"end": FORMAT, "rows": len(lines),
                        "header_sha256": hashlib.sha256(htext.encode("utf-8")).hexdigest(),
                        "rows_sha256": rows_hash.hexdigest()}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return header


def read_artifact(path):
    """(header, rows) of a whole artifact, or ArtifactError naming what is wrong."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.endswith(b"\n"):
        raise ArtifactError(f"{path}: unfinished (the last line has no end of line)")
    lines = data[:-1].split(b"\n")
    if len(lines) < 2:
        raise ArtifactError(f"{path}: unfinished (no end line)")
    try:
        end = json.loads(lines[-1])
    except json.JSONDecodeError:
        end = None
    if not isinstance(end, dict) or end.get("end") != FORMAT:
        raise ArtifactError(f"{path}: unfinished (the last line is not the end line)")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{path}: line 1 is not JSON ({e.msg})") from None
    if header.get("format") != FORMAT:
        raise ArtifactError(f"{path}: not a reference artifact (format {header.get('format')!r})")
    if header.get("version") != VERSION:
        raise ArtifactError(f"{path}: artifact version {header.get('version')!r} is not one this library reads ({VERSION})")
    if hashlib.sha256(lines[0]).hexdigest() != end.get("header_sha256"):
        raise ArtifactError(f"{path}: the header does not match the end line's hash")
    body = lines[1:-1]
    h = hashlib.sha256()
    for line in body:
        h.update(line + b"\n")
    if h.hexdigest() != end.get("rows_sha256"):
        raise ArtifactError(f"{path}: the rows do not match the end line's hash")
    if len(body) != end.get("rows"):
        raise ArtifactError(f"{path}: {len(body)} rows, the end line says {end.get('rows')}")
    rows = []
    for i, line in enumerate(body, start=2):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ArtifactError(f"{path}:{i}: not JSON ({e.msg})") from None
    scope = Scope(header["scope"])
    if scope.fingerprint(header["columns"]) != header.get("fingerprint"):
        raise ArtifactError(f"{path}: the fingerprint is not the scope's")
    return header, rows
