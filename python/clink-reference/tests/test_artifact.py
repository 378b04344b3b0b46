"""The artifact offline: whole and bound to its scope, or refused naming why."""
import json

import pytest

from clink_reference import ArtifactError, Scope, ScopeError, read_artifact, write_artifact
from conftest import scope_doc

COLS = [{"name": "id", "type": "Int64", "key": True}, {"name": "v", "type": "Nullable(String)"}]


def test_round_trip_is_sorted_and_deterministic(tmp_path):
    s = Scope(scope_doc())
    a, b = tmp_path / "a", tmp_path / "b"
    write_artifact(a, s, COLS, [(2, "y"), (1, None)], reference={"implementation": "test"})
    write_artifact(b, s, COLS, [(1, None), (2, "y")], reference={"implementation": "test"})
    assert a.read_bytes() == b.read_bytes()
    header, rows = read_artifact(a)
    assert rows == [["1", None], ["2", "y"]]
    assert header["status"] == "complete" and header["scope"] == s.text
    assert header["fingerprint"] == s.fingerprint(header["columns"])


def test_unfinished_and_tampered_files_are_refused(tmp_path):
    p = tmp_path / "a"
    write_artifact(p, Scope(scope_doc()), COLS, [(1, "x"), (2, "y")])
    lines = p.read_bytes().split(b"\n")
    (tmp_path / "cut").write_bytes(b"\n".join(lines[:-2]) + b"\n")
    with pytest.raises(ArtifactError, match="unfinished"):
        read_artifact(tmp_path / "cut")
    (tmp_path / "nl").write_bytes(p.read_bytes()[:-1])
    with pytest.raises(ArtifactError, match="unfinished"):
        read_artifact(tmp_path / "nl")
    (tmp_path / "row").write_bytes(p.read_bytes().replace(b'["2","y"]', b'["2","z"]'))
    with pytest.raises(ArtifactError, match="rows do not match"):
        read_artifact(tmp_path / "row")
    h = json.loads(lines[0])
    h["scope"] = h["scope"].replace('"checkpoint": 3', '"checkpoint": 4')
    (tmp_path / "hdr").write_bytes(b"\n".join([json.dumps(h).encode()] + lines[1:]))
    with pytest.raises(ArtifactError, match="header does not match"):
        read_artifact(tmp_path / "hdr")


def test_an_incomplete_reference_keeps_its_reasons_and_no_rows(tmp_path):
    class Read:
        complete = False
        reasons = ["history expired: partition 0 of t now starts at offset 5, after the range's from 0"]

        def describe(self):
            return {"complete": False, "reasons": self.reasons}

    p = tmp_path / "a"
    write_artifact(p, Scope(scope_doc()), COLS, [(1, "x")], read=Read())
    header, rows = read_artifact(p)
    assert header["status"] == "incomplete" and rows == []
    assert header["incomplete"] == Read.reasons


def test_the_fingerprint_names_every_binding_field():
    base = Scope(scope_doc()).fingerprint(COLS)
    variants = [scope_doc(checkpoint=4), scope_doc(topic="u"), scope_doc(cluster_id="c2"),
                scope_doc(topic_id="BBBBBBBBBBBBBBBBBBBBBB"), scope_doc(parts=((0, 0, 11),)),
                scope_doc(parts=((0, 1, 10),)), scope_doc(isolation="read_uncommitted")]
    for v in variants:
        assert Scope(v).fingerprint(COLS) != base, v
    assert Scope(scope_doc()).fingerprint(COLS[:1]) != base
    assert Scope(scope_doc()).fingerprint([dict(COLS[0], type="Int32"), COLS[1]]) != base
    text = Scope(scope_doc()).fingerprint_text(COLS)
    assert text.splitlines()[0] == "clink-reference-fingerprint 1"
    assert "partition 0 0 0 10\n" in text and "column id Int64 key\n" in text


def test_scope_documents_are_checked():
    with pytest.raises(ScopeError, match="not JSON"):
        Scope("{")
    with pytest.raises(ScopeError, match="format is not"):
        Scope('{"format": "x"}')
    with pytest.raises(ScopeError, match="version 9"):
        Scope(scope_doc().replace('"version": 1', '"version": 9'))
    with pytest.raises(ScopeError, match="white space"):
        Scope(scope_doc(topic="a b")).fingerprint(COLS)
