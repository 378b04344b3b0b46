"""pyclink — the clink stream-processing engine in this Python process.

    import pyarrow as pa, pyclink

    with pyclink.Engine(parallelism=2) as e:
        e.execute('''
            CREATE TABLE readings (sensor VARCHAR, ts TIMESTAMP(3), temp DOUBLE)
              WITH (connector = 'push', event_time_column = 'ts');
            CREATE TABLE per_minute (window_start TIMESTAMP(3), sensor VARCHAR, avg_temp DOUBLE)
              WITH (connector = 'collect');
            INSERT INTO per_minute
              SELECT window_start, sensor, AVG(temp) AS avg_temp FROM readings
              GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), sensor;
        ''')
        e.push("readings", dataframe, close=True)   # pandas, pyarrow tables or batches
        table = e.collect("per_minute").read_all()

The engine is libclink (bundled with the package) driven through ctypes; rows cross in both
directions as the Arrow C data interface: results arrive as pyarrow batches whose column
buffers are the engine's own (no copy but BOOLEAN columns'), pushed batches are converted to
the table's columns once. pyarrow is the only dependency.

Update streams: a GROUP BY without a window is an updating result. Its stream leads with the
column ``__op``, each row's kind ("+I", "-U", "+U", "-D", as Flink's RowKind; a dictionary
column), and ``materialize=True`` (``Engine.collect``, ``Engine.sql``) or ``materialize(t)``
applies the changelog and returns the final table. Append-only results have no ``__op``.

Ctrl-C: a wait (Job.wait, Engine.await_all) or a read from a stream of this package cancels
the job(s) concerned (a query's stream: its job; a collect table's stream: every job of the
engine) and raises KeyboardInterrupt; the engine stays usable.
"""

from __future__ import annotations

import ctypes
import enum
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int, c_int64, c_size_t,
                    c_void_p)
from typing import Callable, Iterable, Iterator, List, Optional, Union

import pyarrow as pa

__all__ = ["Engine", "Job", "JobStatus", "ClinkError", "abi_version", "version", "materialize",
           "ROW_KINDS", "OP_COLUMN"]
__version__ = "0.1.0"

_POLL_MS = 100  # how often a blocked call looks for Ctrl-C

OP_COLUMN = "__op"
"""The row-kind column leading an update stream's batches."""
ROW_KINDS = ("+I", "-U", "+U", "-D")
"""The row kinds, by their int8 code in the ``__op`` column (clink_row_kind_t)."""
_UPSERT_KEY = b"clink.upsert_key"


class _ArrowSchema(Structure):
    _fields_ = [("format", c_char_p), ("name", c_char_p), ("metadata", c_char_p),
                ("flags", c_int64), ("n_children", c_int64), ("children", c_void_p),
                ("dictionary", c_void_p), ("release", c_void_p), ("private_data", c_void_p)]


class _ArrowArray(Structure):
    _fields_ = [("length", c_int64), ("null_count", c_int64), ("offset", c_int64),
                ("n_buffers", c_int64), ("n_children", c_int64), ("buffers", c_void_p),
                ("children", c_void_p), ("dictionary", c_void_p), ("release", c_void_p),
                ("private_data", c_void_p)]


class _ArrowArrayStream(Structure):
    _fields_ = [("get_schema", c_void_p), ("get_next", c_void_p), ("get_last_error", c_void_p),
                ("release", c_void_p), ("private_data", c_void_p)]


_LOGFN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
_GET_SCHEMA = CFUNCTYPE(c_int, POINTER(_ArrowArrayStream), POINTER(_ArrowSchema))
_GET_NEXT = CFUNCTYPE(c_int, POINTER(_ArrowArrayStream), POINTER(_ArrowArray))
_GET_ERROR = CFUNCTYPE(c_char_p, POINTER(_ArrowArrayStream))
_RELEASE = CFUNCTYPE(None, POINTER(_ArrowArrayStream))


class _Options(Structure):
    _fields_ = [("size", c_size_t), ("parallelism", c_int), ("max_parallelism", c_int),
                ("checkpoint_dir", c_char_p), ("checkpoint_interval_ms", c_int64),
                ("log_level", c_int), ("log_fn", _LOGFN), ("log_ctx", c_void_p),
                ("max_memory", c_int64), ("collect_batches", c_int)]


def _load() -> ctypes.CDLL:
    path = os.environ.get("PYCLINK_LIBCLINK") or os.path.join(os.path.dirname(__file__),
                                                               "libclink.so.1")
    lib = ctypes.CDLL(path)
    P = c_void_p
    sig = {
        "clink_options_init": (None, [POINTER(_Options)]),
        "clink_abi_version": (c_int, []),
        "clink_version": (c_char_p, []),
        "clink_engine_open": (c_int, [POINTER(_Options), POINTER(P), c_char_p, c_size_t]),
        "clink_engine_close": (None, [P]),
        "clink_last_error": (c_char_p, [P, POINTER(c_int), POINTER(c_int)]),
        "clink_exec": (c_int, [P, c_char_p, POINTER(P), c_int, POINTER(c_int)]),
        "clink_query": (c_int, [P, c_char_p, POINTER(_ArrowArrayStream), POINTER(P)]),
        "clink_collect": (c_int, [P, c_char_p, POINTER(_ArrowArrayStream)]),
        "clink_stream_poll": (c_int, [POINTER(_ArrowArrayStream), c_int64]),
        "clink_push": (c_int, [P, c_char_p, POINTER(_ArrowArray), POINTER(_ArrowSchema)]),
        "clink_push_close": (c_int, [P, c_char_p]),
        "clink_job_status": (c_int, [P]),
        "clink_job_id": (c_int64, [P]),
        "clink_job_wait": (c_int, [P, c_int64]),
        "clink_job_cancel": (None, [P]),
        "clink_job_error": (c_char_p, [P, POINTER(c_int), POINTER(c_int)]),
        "clink_job_counts": (None, [P, POINTER(c_int64), POINTER(c_int64)]),
        "clink_await_all": (c_int, [P, c_int64]),
        "clink_cancel_all": (None, [P]),
        "clink_arrow_bytes": (None, [POINTER(c_int64), POINTER(c_int64)]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


_lib = _load()

_ETIMEOUT = -13
_ECANCELLED = -14


def abi_version() -> int:
    """The ABI version of the bundled libclink (CLINK_ABI_VERSION)."""
    return _lib.clink_abi_version()


def version() -> str:
    """The release of the bundled libclink, e.g. "0.1.0"."""
    return _lib.clink_version().decode()


def arrow_bytes() -> tuple:
    """(copied, in_place): bytes of column data the engine copied into, and handed out in place
    as, the Arrow arrays of every stream of this process so far."""
    c, i = c_int64(), c_int64()
    _lib.clink_arrow_bytes(byref(c), byref(i))
    return c.value, i.value


class ClinkError(Exception):
    """An error of the engine. ``line`` and ``column`` (1-based; 0 when none) say where the SQL
    is at fault; ``code`` is the engine's error code (negative)."""

    def __init__(self, message: str, code: int = 0, line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.column = column


class JobStatus(str, enum.Enum):
    """Where a job is: RUNNING, or how it ended."""
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"


_STATUS = [JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.CANCELLED, JobStatus.FAILED]


class Job:
    """A standing job of an engine (one INSERT of Engine.execute, or the SELECT of Engine.sql).
    Valid while its engine is open."""

    def __init__(self, engine: "Engine", handle: int):
        self._engine = engine
        self._h = c_void_p(handle)

    @property
    def id(self) -> int:
        """The job's number in its engine: 1, 2, …"""
        return _lib.clink_job_id(self._h)

    @property
    def status(self) -> JobStatus:
        """RUNNING, FINISHED, CANCELLED or FAILED."""
        self._engine._check_open()
        return _STATUS[_lib.clink_job_status(self._h)]

    @property
    def counts(self) -> tuple:
        """(records read, records written) so far."""
        r, w = c_int64(), c_int64()
        _lib.clink_job_counts(self._h, byref(r), byref(w))
        return r.value, w.value

    @property
    def error(self) -> Optional[ClinkError]:
        """Why the job failed, or None."""
        line, col = c_int(), c_int()
        msg = _lib.clink_job_error(self._h, byref(line), byref(col))
        return ClinkError(msg.decode(), -1, line.value, col.value) if msg else None

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits up to timeout seconds (None: for ever) for the job to end. True when it ended
        (finished or cancelled), False when it still runs; raises ClinkError when it failed.
        Ctrl-C cancels the job and raises KeyboardInterrupt."""
        self._engine._check_open()
        rc = _wait_sliced(lambda ms: _lib.clink_job_wait(self._h, ms), timeout, self.cancel)
        if rc == _ETIMEOUT:
            return False
        if rc not in (0, _ECANCELLED):
            raise self.error or ClinkError("the job failed", rc)
        return True

    def cancel(self) -> None:
        """Stops the job (its collect streams end with an error saying it was cancelled)."""
        self._engine._check_open()
        _lib.clink_job_cancel(self._h)

    def __repr__(self) -> str:
        return "<pyclink.Job %d %s>" % (self.id, self.status.value)


def _wait_sliced(call: Callable[[int], int], timeout: Optional[float],
                 on_interrupt: Callable[[], None]) -> int:
    """call(ms) in slices of _POLL_MS until it returns something else than a timeout or the
    timeout passed; Ctrl-C runs on_interrupt and re-raises."""
    import time
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            ms = _POLL_MS
            if deadline is not None:
                ms = max(0, min(ms, int((deadline - time.monotonic()) * 1000)))
            rc = call(ms)
            if rc != _ETIMEOUT or (deadline is not None and time.monotonic() >= deadline):
                return rc
    except KeyboardInterrupt:
        on_interrupt()
        raise


class _Stream:
    """One of the library's ArrowArrayStreams, read batch by batch in Ctrl-C-sized waits."""

    def __init__(self, engine: "Engine", job: Optional[Job]):
        self.engine = engine
        self.job = job
        self.st = _ArrowArrayStream()

    def schema(self) -> pa.Schema:
        s = _ArrowSchema()
        rc = _GET_SCHEMA(self.st.get_schema)(byref(self.st), byref(s))
        if rc:
            raise ClinkError("could not read the stream's schema", -rc)
        return pa.Schema._import_from_c(ctypes.addressof(s))

    def batches(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        get_next = _GET_NEXT(self.st.get_next)
        try:
            while True:
                while _lib.clink_stream_poll(byref(self.st), _POLL_MS) == 0:
                    pass
                arr = _ArrowArray()
                rc = get_next(byref(self.st), byref(arr))
                if rc:
                    msg = _GET_ERROR(self.st.get_last_error)(byref(self.st))
                    raise ClinkError(msg.decode() if msg else "the stream failed (%d)" % rc,
                                     _ECANCELLED if rc == 125 else -rc)
                if not arr.release:
                    return
                yield pa.RecordBatch._import_from_c(ctypes.addressof(arr), schema)
        except KeyboardInterrupt:
            if not self.engine._closed:  # the query's job; for a collect table, every job
                if self.job is not None:
                    self.job.cancel()
                else:
                    self.engine.cancel_all()
            raise
        finally:
            self.release()

    def release(self) -> None:
        if self.st.release:
            _RELEASE(self.st.release)(byref(self.st))
            self.st.release = None

    def __del__(self):  # a reader dropped before its first batch never ran batches()' finally
        try:
            self.release()
        except Exception:
            pass

    def reader(self) -> pa.RecordBatchReader:
        schema = self.schema()
        return pa.RecordBatchReader.from_batches(schema, self.batches(schema))


def materialize(data: Union[pa.Table, pa.RecordBatchReader],
                key: Optional[List[str]] = None) -> pa.Table:
    """The final table of a changelog: a collect table's or a query's rows (a Table or a
    RecordBatchReader, read to its end) with their ``__op`` column applied in order, as
    pyflink's ``to_pandas`` does with an updating result: "+I" and "+U" set the row of their
    key, "-U" and "-D" remove it. key: the columns naming a row; by default the stream's
    upsert key (its schema metadata "clink.upsert_key", the GROUP BY columns). The result has
    the table's columns without ``__op``, one row per live key, in the order of their last
    change. Data without ``__op`` (an append-only result) comes back as it is."""
    table = data.read_all() if isinstance(data, pa.RecordBatchReader) else data
    names = table.schema.names
    if OP_COLUMN not in names:
        return table
    if key is None:
        meta = table.schema.metadata or {}
        if _UPSERT_KEY not in meta:
            raise ClinkError("could not materialise the changelog: its rows do not carry their "
                             "whole GROUP BY key, so an update cannot be matched to the row it "
                             "replaces; select every GROUP BY column, or pass key=[...]")
        import json
        key = json.loads(meta[_UPSERT_KEY].decode())
    for k in key:
        if k not in names or k == OP_COLUMN:
            raise ClinkError("could not materialise the changelog: %r is not a column" % k)
    import pyarrow.compute as pc
    kinds = table.column(OP_COLUMN)  # by name, whatever dictionary each chunk has
    codes = pc.index_in(pc.cast(kinds, pa.string()), value_set=pa.array(ROW_KINDS))
    body = table.drop_columns([OP_COLUMN])
    idx = pa.array(range(table.num_rows), type=pa.int64())
    if key:  # each key's last change, in the order of those changes
        groups = (body.select(key).append_column("__idx", idx)
                  .group_by(key, use_threads=False).aggregate([("__idx", "max")]))
        last = groups.column("__idx_max")
        last = pc.take(last, pc.sort_indices(last))
    else:  # a global aggregate: one row, the last
        last = pa.array([table.num_rows - 1] if table.num_rows else [], type=pa.int64())
    live = pc.is_in(pc.take(codes, last).cast(pa.int8()), value_set=pa.array([0, 2], pa.int8()))
    keep = pc.filter(last, live)
    return body.take(keep).replace_schema_metadata(None)


_LEVELS = {"off": 0, "error": 1, "warn": 2, "warning": 2, "info": 3, "debug": 4}

PushData = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, Iterable[pa.RecordBatch],
                 "pandas.DataFrame"]  # noqa: F821


class Engine:
    """A clink engine in this process. Use it as a context manager (or call close()): closing
    cancels the jobs still running and waits for them.

    parallelism: subtasks per operator; max_parallelism: key groups of keyed state;
    checkpoint_dir: take checkpoints (each job into <dir>/job-<id>) and resume from them when
    the same jobs run again; checkpoint_interval_ms; log_level: "off", "error", "warn",
    "info" or "debug"; log: a callable(level: str, line: str) receiving the engine's log lines
    instead of standard error (called from the engine's threads); max_memory: bytes a job may
    hold (0: no limit); collect_batches: batches a collect table holds before its job waits
    for the reader.
    """

    def __init__(self, parallelism: int = 1, checkpoint_dir: Optional[str] = None,
                 checkpoint_interval_ms: int = 10000, max_parallelism: int = 128,
                 log_level: str = "warn", log: Optional[Callable[[str, str], None]] = None,
                 max_memory: int = 0, collect_batches: int = 16):
        o = _Options()
        _lib.clink_options_init(byref(o))
        o.parallelism = parallelism
        o.max_parallelism = max_parallelism
        o.checkpoint_dir = os.fsencode(checkpoint_dir) if checkpoint_dir else None
        o.checkpoint_interval_ms = checkpoint_interval_ms
        if log_level.lower() not in _LEVELS:
            raise ValueError("log_level must be one of %s" % ", ".join(_LEVELS))
        o.log_level = _LEVELS[log_level.lower()]
        self._logfn = None
        if log is not None:
            names = ["off", "error", "warn", "info", "debug"]

            def trampoline(ctx, level, line):
                try:
                    log(names[level], line.decode(errors="replace"))
                except Exception:  # a callback must not raise into the engine
                    pass
            self._logfn = _LOGFN(trampoline)
            o.log_fn = self._logfn
        o.max_memory = max_memory
        o.collect_batches = collect_batches
        h = c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = _lib.clink_engine_open(byref(o), byref(h), err, len(err))
        if rc:
            raise ClinkError(err.value.decode(), rc)
        self._h = h
        self._closed = False
        self._jobs: List[Job] = []

    # -- lifetime
    def close(self) -> None:
        """Cancels the running jobs, waits for them and frees the engine (idempotent)."""
        if not self._closed:
            self._closed = True
            _lib.clink_engine_close(self._h)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _check_open(self) -> None:
        if self._closed:
            raise ClinkError("the engine is closed", -100)

    def _error(self, rc: int) -> ClinkError:
        line, col = c_int(), c_int()
        msg = _lib.clink_last_error(self._h, byref(line), byref(col))
        return ClinkError(msg.decode() if msg else "error %d" % rc, rc, line.value, col.value)

    # -- SQL
    def execute(self, sql: str) -> List[Job]:
        """Runs a script: its CREATE TABLEs join the engine's tables, every INSERT INTO … SELECT
        starts a job; returns the jobs in statement order. Raises ClinkError (with line and
        column) when the script is wrong; then nothing of it took effect."""
        self._check_open()
        handles = (c_void_p * 64)()
        n = c_int()
        rc = _lib.clink_exec(self._h, sql.encode(), handles, 64, byref(n))
        if rc:
            raise self._error(rc)
        jobs = [Job(self, handles[i]) for i in range(n.value)]
        self._jobs.extend(jobs)
        return jobs

    def sql(self, query: str, stream: bool = False, materialize: bool = False
            ) -> Union[pa.Table, pa.RecordBatchReader]:
        """Runs one bare SELECT (CREATE TABLEs may come before it). Returns its rows as a
        pyarrow.Table once the query's input ended (a bounded query: files, a Kafka topic read
        up to its end with scan.bounded, a closed push table), or with stream=True at once as a
        RecordBatchReader yielding batches as the job produces them. An updating query (a
        GROUP BY) leads with the ``__op`` column; materialize=True returns the final table
        instead (pyclink.materialize)."""
        if stream and materialize:
            raise ValueError("materialize=True reads the query to its end: it cannot stream")
        self._check_open()
        s = _Stream(self, None)
        jh = c_void_p()
        rc = _lib.clink_query(self._h, query.encode(), byref(s.st), byref(jh))
        if rc:
            raise self._error(rc)
        s.job = Job(self, jh.value)
        self._jobs.append(s.job)
        reader = s.reader()
        if materialize:
            return globals()["materialize"](reader)
        return reader if stream else reader.read_all()

    def collect(self, table: str, materialize: bool = False
                ) -> Union[pa.RecordBatchReader, pa.Table]:
        """A RecordBatchReader over a collect table's rows, batch by batch as its job writes
        them; it ends when that job ends (an error if it failed). One reader per table; an
        unread table makes its job wait. Start the job writing the table first (execute):
        an update stream (a GROUP BY) then leads with the ``__op`` column, each row's kind
        ("+I", "-U", "+U", "-D"); an append-only one has the table's columns alone.
        materialize=True reads to the end and returns the final table, the changelog applied
        (pyclink.materialize)."""
        self._check_open()
        s = _Stream(self, None)
        rc = _lib.clink_collect(self._h, table.encode(), byref(s.st))
        if rc:
            raise self._error(rc)
        reader = s.reader()
        return globals()["materialize"](reader) if materialize else reader

    def push(self, table: str, data: PushData, close: bool = False) -> int:
        """Feeds a push table: a pyarrow Table, RecordBatch, RecordBatchReader, an iterable of
        batches, or a pandas DataFrame (anything pyarrow.table() takes). Columns are matched by
        name; types convert to the table's where nothing is lost (any timestamp unit, narrower
        integers, large strings). Blocks while the table's job is behind. close=True ends the
        table's input afterwards. Returns the rows pushed."""
        self._check_open()
        rows = 0
        for batch in _batches_of(data):
            if batch.num_rows == 0:
                continue
            arr, sch = _ArrowArray(), _ArrowSchema()
            batch._export_to_c(ctypes.addressof(arr), ctypes.addressof(sch))
            rc = _lib.clink_push(self._h, table.encode(), byref(arr), byref(sch))
            if rc:
                raise self._error(rc)
            rows += batch.num_rows
        if close:
            self.close_push(table)
        return rows

    def close_push(self, table: str) -> None:
        """Ends a push table's input: its source ends once its job took every batch."""
        self._check_open()
        rc = _lib.clink_push_close(self._h, table.encode())
        if rc:
            raise self._error(rc)

    # -- every job
    @property
    def jobs(self) -> List[Job]:
        """The jobs started so far."""
        return list(self._jobs)

    def await_all(self, timeout: Optional[float] = None) -> bool:
        """Waits for every job to end: True, or False after timeout seconds; raises ClinkError
        for the first job that failed. Ctrl-C cancels every job and raises
        KeyboardInterrupt."""
        self._check_open()
        rc = _wait_sliced(lambda ms: _lib.clink_await_all(self._h, ms), timeout,
                          self.cancel_all)
        if rc == _ETIMEOUT:
            return False
        if rc and rc != _ECANCELLED:
            raise self._error(rc)
        return True

    def cancel_all(self) -> None:
        """Cancels every running job."""
        self._check_open()
        _lib.clink_cancel_all(self._h)


def _batches_of(data) -> Iterator[pa.RecordBatch]:
    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif type(data).__name__ == "DataFrame" and hasattr(data, "columns"):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
    elif hasattr(data, "__arrow_c_stream__"):
        yield from pa.RecordBatchReader.from_stream(data)
    else:
        for item in data:
            yield from _batches_of(item)
