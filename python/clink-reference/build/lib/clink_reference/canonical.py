"""Canonical cells: the comparison's own rules, one per destination column type.

DESIGN
  A reference row is compared with the destination's cell by cell, and the comparison must not
  borrow the job's or the sink's conversions (a converter defect would then be invisible). So a
  cell is reduced here, from the reference's own Python value and the ClickHouse column type,
  to a canonical form that is equal exactly when the destination can hold only that value:

    Int8 … UInt64, Bool      the exact integer, as decimal digits ("42")
    Float32, Float64         the IEEE-754 bits, "0x…" (every NaN one value, -0.0 != +0.0)
    Decimal(P, S)            the unscaled integer at scale S ("12.30" at S=2 -> "1230")
    Date                     days since 1970-01-01
    DateTime                 seconds since the epoch (UTC)
    DateTime64(p)            ticks of 10^-p s since the epoch (UTC)
    String                   the bytes: a JSON string when they are UTF-8, else {"hex": "…"}
    Nullable(T)              None for NULL, else T's form
    LowCardinality(String)   as String

  A value the column cannot hold exactly (a float a Float32 rounds, a decimal with more
  fraction digits than S, an integer out of the width's range) is {"inexact": "…"}: equal to
  nothing, so the comparison reports it instead of rounding it into agreement. Every other
  type is refused by name (CellError): the comparison has no rule for it.
  These are the same rules as the audit's reader of the destination (docs/incidents.md,
  "Comparing"); tests/test_canonical.py holds this side to the table above.
"""

import datetime as _dt
import decimal as _dec
import math
import re
import struct

__all__ = ["CellError", "canonical_cell", "canonical_row", "column_rule"]


class CellError(ValueError):
    """A value or a column type the comparison has no rule for."""


_INT_RANGES = {
    "Int8": (-2**7, 2**7 - 1), "Int16": (-2**15, 2**15 - 1),
    "Int32": (-2**31, 2**31 - 1), "Int64": (-2**63, 2**63 - 1),
    "UInt8": (0, 2**8 - 1), "UInt16": (0, 2**16 - 1),
    "UInt32": (0, 2**32 - 1), "UInt64": (0, 2**64 - 1), "Bool": (0, 1),
}
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_DECIMAL_RE = re.compile(r"^Decimal(?:(32|64|128|256)\((\d+)\)|\((\d+),\s*(\d+)\))$")
_DT64_RE = re.compile(r"^DateTime64\((\d)(?:,\s*'[^']*')?\)$")
_DT_RE = re.compile(r"^DateTime(?:\('[^']*'\))?$")
_DECIMAL_BITS_PRECISION = {"32": 9, "64": 18, "128": 38, "256": 76}


def column_rule(ch_type):
    """(kind, params, nullable) for a ClickHouse type name, or CellError naming it."""
    t = ch_type.strip()
    nullable = False
    m = re.match(r"^Nullable\((.*)\)$", t)
    if m:
        nullable, t = True, m.group(1).strip()
    m = re.match(r"^LowCardinality\((.*)\)$", t)
    if m:
        inner = m.group(1).strip()
        m2 = re.match(r"^Nullable\((.*)\)$", inner)
        if m2:
            nullable, inner = True, m2.group(1).strip()
        if inner != "String":
            raise CellError(f"the comparison has no rule for the column type {ch_type}")
        t = inner
    if t in _INT_RANGES:
        return "int", _INT_RANGES[t], nullable
    if t in ("Float32", "Float64"):
        return t.lower(), None, nullable
    m = _DECIMAL_RE.match(t)
    if m:
        if m.group(1):
            p, s = _DECIMAL_BITS_PRECISION[m.group(1)], int(m.group(2))
        else:
            p, s = int(m.group(3)), int(m.group(4))
        if not (0 <= s <= p <= 76) or p == 0:
            raise CellError(f"the column type {ch_type} has no valid precision and scale")
        return "decimal", (p, s), nullable
    if t == "Date":
        return "date", None, nullable
    if _DT_RE.match(t):
        return "datetime64", 0, nullable
    m = _DT64_RE.match(t)
    if m:
        return "datetime64", int(m.group(1)), nullable
    if t == "String":
        return "string", None, nullable
    raise CellError(f"the comparison has no rule for the column type {ch_type}")


def _inexact(value):
    return {"inexact": repr(value)}


def _int_cell(value, rng):
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, _dec.Decimal) and value == value.to_integral_value():
        value = int(value)
    if not isinstance(value, int):
        raise CellError(f"an integer column needs an int, not {type(value).__name__} {value!r}")
    lo, hi = rng
    return str(value) if lo <= value <= hi else _inexact(value)


def _float_cell(value, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CellError(f"a {kind} column needs a float, not {type(value).__name__} {value!r}")
    if isinstance(value, int):
        f = float(value)
        if int(f) != value:
            return _inexact(value)
        value = f
    if kind == "float32":
        if math.isnan(value):
            return "0x7fc00000"
        try:
            packed = struct.pack("<f", value)
        except OverflowError:
            return _inexact(value)
        if struct.unpack("<f", packed)[0] != value:
            return _inexact(value)
        return "0x%08x" % struct.unpack("<I", packed)[0]
    if math.isnan(value):
        return "0x7ff8000000000000"
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _decimal_cell(value, ps):
    p, s = ps
    if isinstance(value, bool):
        raise CellError(f"a Decimal column needs a number, not {value!r}")
    if isinstance(value, float):
        # a float's exact binary value, not its shortest repr: 0.1 is not 1/10
        d = _dec.Decimal(value)
    elif isinstance(value, (int, _dec.Decimal)):
        d = _dec.Decimal(value)
    elif isinstance(value, str):
        try:
            d = _dec.Decimal(value)
        except _dec.InvalidOperation as e:
            raise CellError(f"{value!r} is not a decimal number") from e
    else:
        raise CellError(f"a Decimal column needs a number, not {type(value).__name__} {value!r}")
    if not d.is_finite():
        return _inexact(value)
    scaled = d.scaleb(s)
    if scaled != scaled.to_integral_value():
        return _inexact(value)
    unscaled = int(scaled)
    return str(unscaled) if abs(unscaled) < 10**p else _inexact(value)


def _date_cell(value):
    if isinstance(value, _dt.datetime):
        raise CellError(f"a Date column needs a date or a day number, not the datetime {value!r}")
    if isinstance(value, _dt.date):
        return str((value - _EPOCH_DATE).days)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise CellError(f"a Date column needs a date or a day number, not {type(value).__name__} {value!r}")


def _ticks_cell(value, p):
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _EPOCH  # exact: days, seconds, microseconds
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        if p >= 6:
            return str(micros * 10**(p - 6))
        q, r = divmod(micros, 10**(6 - p))
        return str(q) if r == 0 else _inexact(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # already ticks of the column's unit
    raise CellError(f"a DateTime column needs a datetime or ticks, not {type(value).__name__} {value!r}")


def _string_cell(value):
    if isinstance(value, str):
        b = value.encode("utf-8", "surrogatepass")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    else:
        raise CellError(f"a String column needs str or bytes, not {type(value).__name__} {value!r}")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def canonical_cell(ch_type, value):
    """The canonical form of one value for a ClickHouse column of type ch_type."""
    kind, params, nullable = column_rule(ch_type)
    if value is None:
        if not nullable:
            raise CellError(f"NULL in the non-nullable column type {ch_type}")
        return None
    if kind == "int":
        return _int_cell(value, params)
    if kind in ("float32", "float64"):
        return _float_cell(value, kind)
    if kind == "decimal":
        return _decimal_cell(value, params)
    if kind == "date":
        return _date_cell(value)
    if kind == "datetime64":
        return _ticks_cell(value, params)
    return _string_cell(value)


def canonical_row(columns, values):
    """One row: columns is [{"name", "type"}, …], values the row's values in that order."""
    if len(values) != len(columns):
        raise CellError(f"a row of {len(values)} values for {len(columns)} columns")
    out = []
    for c, v in zip(columns, values):
        try:
            out.append(canonical_cell(c["type"], v))
        except CellError as e:
            raise CellError(f"column {c['name']}: {e}") from None
    return out
