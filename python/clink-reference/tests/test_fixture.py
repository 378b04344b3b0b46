"""The fixture the audit's C reader is tested on (tests/unit/test_incident_reference.c) is what
this library writes, byte for byte: the two implementations of the format cannot drift apart."""
import importlib.util
import pathlib

import pytest

FIX = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "reference"


def test_the_c_readers_fixture_is_this_librarys_output(tmp_path):
    if not (FIX / "make.py").exists():
        pytest.skip("not in a clink source tree")
    spec = importlib.util.spec_from_file_location("make", FIX / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    make.write(tmp_path / "a.ndjson")
    assert (tmp_path / "a.ndjson").read_bytes() == (FIX / "artifact.ndjson").read_bytes()
    assert (FIX / "scope.json").read_text() == make.scope_text()
