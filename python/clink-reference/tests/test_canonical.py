"""The canonical cells against the rule table in canonical.py's DESIGN comment."""
import datetime as dt
import decimal
import math

import pytest

from clink_reference.canonical import CellError, canonical_cell, canonical_row


@pytest.mark.parametrize("t,v,want", [
    ("Int8", 127, "127"), ("Int8", 128, {"inexact": "128"}), ("UInt8", -1, {"inexact": "-1"}),
    ("Int64", -2**63, str(-2**63)), ("UInt64", 2**64 - 1, str(2**64 - 1)), ("Bool", True, "1"),
    ("Int32", decimal.Decimal("5"), "5"),
])
def test_integers_are_exact(t, v, want):
    assert canonical_cell(t, v) == want


def test_floats_are_their_bits():
    assert canonical_cell("Float64", 1.0) == "0x3ff0000000000000"
    assert canonical_cell("Float64", -0.0) == "0x8000000000000000"
    assert canonical_cell("Float64", 0.0) != canonical_cell("Float64", -0.0)
    nan2 = float.fromhex("0x1.8p+1024") if False else struct_nan()
    assert canonical_cell("Float64", math.nan) == canonical_cell("Float64", nan2) == "0x7ff8000000000000"
    assert canonical_cell("Float32", 0.5) == "0x3f000000"
    assert canonical_cell("Float32", math.nan) == "0x7fc00000"
    # 0.1 is not a Float32: the destination holds another number, so it equals nothing
    assert canonical_cell("Float32", 0.1) == {"inexact": "0.1"}
    assert canonical_cell("Float64", 2**53 + 1) == {"inexact": str(2**53 + 1)}


def struct_nan():
    import struct
    return struct.unpack("<d", struct.pack("<Q", 0x7ff0000000000001))[0]


@pytest.mark.parametrize("t,v,want", [
    ("Decimal(10, 2)", decimal.Decimal("12.3"), "1230"),
    ("Decimal(10, 2)", "12.30", "1230"),
    ("Decimal(10, 2)", 12, "1200"),
    ("Decimal64(2)", decimal.Decimal("-0.01"), "-1"),
    ("Decimal(10, 2)", decimal.Decimal("12.345"), {"inexact": "Decimal('12.345')"}),
    ("Decimal(3, 2)", decimal.Decimal("10.00"), {"inexact": "Decimal('10.00')"}),
    ("Decimal(10, 1)", 0.5, "5"),
    ("Decimal(10, 1)", 0.1, {"inexact": "0.1"}),  # the float 0.1 is not 1/10
])
def test_decimals_are_unscaled_integers_at_the_column_scale(t, v, want):
    assert canonical_cell(t, v) == want


def test_times():
    utc = dt.timezone.utc
    assert canonical_cell("Date", dt.date(1970, 1, 2)) == "1"
    assert canonical_cell("Date", 19000) == "19000"
    assert canonical_cell("DateTime", dt.datetime(1970, 1, 1, 0, 1, tzinfo=utc)) == "60"
    assert canonical_cell("DateTime('UTC')", dt.datetime(1970, 1, 1, 0, 1)) == "60"
    assert canonical_cell("DateTime64(3)", dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=utc)) == "1704067200123"
    assert canonical_cell("DateTime64(6, 'UTC')", dt.datetime(1970, 1, 1, 0, 0, 0, 7, tzinfo=utc)) == "7"
    assert canonical_cell("DateTime64(3)", dt.datetime(1970, 1, 1, 0, 0, 0, 1500, tzinfo=utc)) == {
        "inexact": "datetime.datetime(1970, 1, 1, 0, 0, 0, 1500, tzinfo=datetime.timezone.utc)"}
    with pytest.raises(CellError, match="Date column needs a date"):
        canonical_cell("Date", dt.datetime(2024, 1, 1))


def test_strings_nulls_and_refusals():
    assert canonical_cell("String", "é") == "é"
    assert canonical_cell("String", b"\xff\x00") == {"hex": "ff00"}
    assert canonical_cell("LowCardinality(String)", b"ab") == "ab"
    assert canonical_cell("Nullable(Int32)", None) is None
    assert canonical_cell("LowCardinality(Nullable(String))", None) is None
    with pytest.raises(CellError, match="NULL in the non-nullable column type Int32"):
        canonical_cell("Int32", None)
    for t in ("UUID", "Array(Int32)", "FixedString(3)", "Enum8('a' = 1)", "Map(String, Int32)"):
        with pytest.raises(CellError, match="no rule for the column type"):
            canonical_cell(t, 1)
    with pytest.raises(CellError, match="column b: an integer column needs an int"):
        canonical_row([{"name": "a", "type": "String"}, {"name": "b", "type": "Int32"}], ["x", "1"])
