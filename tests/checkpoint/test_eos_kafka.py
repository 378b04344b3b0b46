"""Exactly-once output of the Kafka sink (delivery_guarantee = 'exactly_once': one Kafka
transaction per checkpoint interval and sink subtask, committed when the checkpoint completes):
kill `clink run` at every fault point of the checkpoint protocol, or with SIGKILL at random
moments, run the same command again until it finishes, and a read_committed consumer of the
output topic must find every window of the job exactly once with exact values, and nothing
else.

The oracle is independent of the engine: the job reads a paced datagen table whose columns are
all sequences (conftest.py: row i is k = i mod 7, ts = BASE_TS + 10*i, v = 5 + 3*(i mod 6)), or
a Kafka input topic this file fills, and the expected windows are recomputed here in Python.

Both ways a restored sink handles a commit lost between COMPLETED and the Kafka commit are
covered: the redo (the interval's rows are kept in the checkpoint, up to redo_max_bytes, and
written again in a new transaction) and the rewind (redo_max_bytes = '0': recover reports
CK_EREWIND, and the CLI restores the checkpoint before and replays the interval).

The broker comes from scripts/services.sh (CLINK_KAFKA_BROKERS, or `services.sh env`); if Kafka
is not running this module starts it and stops it afterwards (only what it started).
"""
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from .conftest import (BASE_TS, CLINK, die_at, expected_windows, FAULT_EXIT, fault_points, KEYS,
                      REPO, V_PERIOD)

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

SERVICES = os.environ.get("CLINK_SERVICES") or str(REPO / "scripts" / "services.sh")
DEADLINE_S = 120
RUN_ID = "%d_%d" % (os.getpid(), int(time.time()))
OUT_PARTITIONS = 2

# ---------------------------------------------------------------- the broker


@pytest.fixture(scope="module")
def brokers():
    """CLINK_KAFKA_BROKERS, starting Kafka through services.sh if it is not running (and then
    stopping it again when the module is done)."""
    b = os.environ.get("CLINK_KAFKA_BROKERS")
    if not b:
        env = subprocess.run([SERVICES, "env"], capture_output=True, text=True, check=True).stdout
        m = re.search(r"CLINK_KAFKA_BROKERS=(\S+)", env)
        assert m, f"services.sh env printed no CLINK_KAFKA_BROKERS:\n{env}"
        b = m.group(1).strip("'\"")
    started = False
    if subprocess.run([SERVICES, "status", "kafka"], capture_output=True).returncode != 0:
        subprocess.run([SERVICES, "start", "kafka"], check=True, timeout=300)
        started = True
    yield b
    if started:
        subprocess.run([SERVICES, "stop", "kafka"], check=True, timeout=300)


@pytest.fixture
def topic(brokers, request):
    """A fresh topic named after the test; a second one with suffix via topic.make(suffix)."""
    node = request.node.name
    base = "ckeos_%s_%s_%s" % (re.sub(r"\W", "_", node)[5:35],
                               hashlib.sha1(node.encode()).hexdigest()[:8], RUN_ID)

    def make(suffix="out", partitions=OUT_PARTITIONS):
        name = "%s_%s" % (base, suffix)
        create_topic(brokers, name, partitions)
        return name
    return make


def create_topic(brokers, name, partitions):
    admin = AdminClient({"bootstrap.servers": brokers})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                            replication_factor=1)])
    futures[name].result(timeout=60)


def produce(brokers, name, records):
    """records: (partition, value dict); waits for every delivery (idempotent, so a retry never
    writes an input record twice)."""
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 5,
                         "enable.idempotence": True})
    failures = []
    for partition, value in records:
        while True:
            try:
                producer.produce(name, json.dumps(value).encode(), partition=partition,
                                 on_delivery=lambda err, _m: err and failures.append(err))
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(DEADLINE_S) == 0
    assert not failures, failures[:3]


def read_committed(brokers, name, partitions=OUT_PARTITIONS):
    """Every record of the topic, read as a read_committed consumer from the start to the end
    (the last stable offset) of each partition, within a deadline: a list of decoded values."""
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "group.id": "clink-eos-test-reader",  # assign() only: never joins, never commits
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
    })
    out, eof = [], set()
    try:
        consumer.assign([TopicPartition(name, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + DEADLINE_S
        while len(eof) < partitions:
            assert time.monotonic() < deadline, \
                f"no end of {name} within {DEADLINE_S} s ({len(out)} records read)"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(msg.partition())
                    continue
                pytest.fail(f"consumer error on {name}: {msg.error()}")
            eof.discard(msg.partition())
            out.append(json.loads(msg.value()))
    finally:
        consumer.close()
    return out


def windows_of(values):
    return Counter((r["k"], r["window_start"], r["window_end"], r["n"], r["total"])
                   for r in values)


def assert_exactly(got, want):
    distinct = Counter(set(got))
    missing = want - distinct
    unexpected = distinct - want
    dup = {w: c for w, c in got.items() if c > 1}
    assert not missing, f"{sum(missing.values())} windows missing, e.g. {sorted(missing)[:3]}"
    assert not unexpected, f"windows that should not exist: {sorted(unexpected)[:3]}"
    assert not dup, f"{len(dup)} windows committed more than once, e.g. {sorted(dup.items())[:3]}"
    assert got == want


def wait_until(what, predicate, timeout=DEADLINE_S, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(interval)

# ---------------------------------------------------------------- the job


def datagen_sql(brokers, out_topic, rows, rate, sink_options):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '{rate}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE_TS}', 'fields.ts.step' = '10',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '5', 'fields.v.step' = '3',
  'fields.v.end' = '{5 + 3 * (V_PERIOD - 1)}',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'kafka', brokers = '{brokers}', topic = '{out_topic}'{sink_options});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


def sanitizers_quiet(log):
    """A sanitizer build (CLINK_SANITIZE=ON) reports here; any report fails the test."""
    for what in ("runtime error:", "AddressSanitizer", "LeakSanitizer"):
        assert what not in log, log[-5000:]


EOS = ", delivery_guarantee = 'exactly_once'"
REWIND = EOS + ", redo_max_bytes = '0'"


class KafkaJob:
    """One pipeline with its checkpoint directory and output topic, run as often as a test
    needs; every run's log is kept."""

    def __init__(self, tmp_path, brokers, out_topic, rows=20000, rate=8000, parallelism=1,
                 interval_ms=100, sink_options=EOS, sql=None):
        self.brokers, self.out_topic = brokers, out_topic
        self.rows, self.parallelism, self.interval_ms = rows, parallelism, interval_ms
        self.ckpt = tmp_path / "ckpt"
        self.sql = tmp_path / "job.sql"
        self.sql.write_text(sql or datagen_sql(brokers, out_topic, rows, rate, sink_options))
        self.logs = []

    def args(self, *extra):
        return [CLINK, "run", str(self.sql), "--checkpoint-dir", str(self.ckpt),
                "--checkpoint-interval-ms", str(self.interval_ms),
                "--parallelism", str(self.parallelism), *extra]

    def env(self, fault=None):
        env = dict(os.environ, CLINK_LOG_LEVEL="debug")
        env.pop("CLINK_FAULT", None)
        if fault:
            env["CLINK_FAULT"] = fault
        return env

    def first_checkpoint_then_kill(self):
        """A run SIGKILLed once two checkpoints completed (so that the next run restores)."""
        assert self.run_killed_after(2) != 0

    def run(self, *extra, fault=None, timeout=DEADLINE_S):
        try:
            r = subprocess.run(self.args(*extra), capture_output=True, text=True,
                               timeout=timeout, env=self.env(fault))
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"clink run did not end within {timeout} s:\n{(e.stderr or '')[-3000:]}")
        self.logs.append(r.stderr)
        sanitizers_quiet(r.stderr)
        return r

    def completed(self):
        meta = self.ckpt / "v1" / "_meta"
        if not meta.is_dir():
            return []
        return sorted(int(m.group(1)) for m in (re.fullmatch(r"completed-(\d+)", f.name)
                                               for f in meta.iterdir()) if m)

    def start(self, *extra):
        """Starts a run in the background; its log goes to a file (a pipe nobody reads while
        the test waits would fill up and stall the job)."""
        log = self.ckpt.parent / f"run-{len(self.logs)}-{time.monotonic_ns()}.log"
        with open(log, "w") as f:
            p = subprocess.Popen(self.args(*extra), stdout=subprocess.DEVNULL, stderr=f,
                                 env=self.env())
        p.log_path = log
        return p

    def finished(self, p):
        """Waits for a started run to end; its log."""
        p.wait(timeout=DEADLINE_S)
        err = p.log_path.read_text()
        self.logs.append(err)
        sanitizers_quiet(err)
        return err

    def kill(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        self.finished(p)
        return p.returncode

    def run_killed_after(self, new_checkpoints, jitter_s=0.0):
        """Starts the job, SIGKILLs it once `new_checkpoints` more checkpoints completed (and a
        random moment within jitter_s after that); returns its exit status (0 if it finished
        first)."""
        # by id: retention deletes old markers, so their count stays at a few
        before = max(self.completed(), default=0)
        p = self.start()
        wait_until(f"{new_checkpoints} completed checkpoints",
                   lambda: max(self.completed(), default=0) >= before + new_checkpoints
                   or p.poll() is not None, interval=0.002)
        if jitter_s and p.poll() is None and random.random() < 0.6:
            try:
                p.wait(timeout=random.uniform(0, jitter_s))  # a random moment, not a sync
            except subprocess.TimeoutExpired:
                pass
        return self.kill(p)

    def run_to_end(self, limit=10):
        for _ in range(limit):
            r = self.run()
            if r.returncode == 0:
                return r
        pytest.fail("the job did not finish after %d reruns:\n%s" % (limit, self.logs[-1][-3000:]))

    def check(self):
        assert_exactly(windows_of(read_committed(self.brokers, self.out_topic)),
                       expected_windows(self.rows))

# ---------------------------------------------------------------- tests


def test_uninterrupted_run_is_exactly_once_and_says_so(brokers, topic, tmp_path):
    j = KafkaJob(tmp_path, brokers, topic(), rate=0)
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in r.stderr
    assert re.search(r"transactional ids 'clink-[0-9a-f]{16}-0-0'/'clink-[0-9a-f]{16}-0-1', "
                     r"marker group 'clink-sink-[0-9a-f]{16}-0'", r.stderr), r.stderr[-3000:]
    j.check()


def test_at_least_once_stays_the_default(brokers, topic, tmp_path):
    j = KafkaJob(tmp_path, brokers, topic(), rows=700, rate=0, sink_options="")
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert ("job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink "
            "'kafka_sink')") in r.stderr
    assert "transactional ids" not in r.stderr
    j.check()


@pytest.mark.parametrize("mode", ["redo", "rewind"])
@pytest.mark.parametrize("point", fault_points())
def test_killed_at_each_fault_point_then_rerun(brokers, topic, tmp_path, point, mode):
    j = KafkaJob(tmp_path, brokers, topic(), sink_options=EOS if mode == "redo" else REWIND)
    r = die_at(j, point)
    j.run_to_end()
    j.check()


@pytest.mark.parametrize("point", ["after_completed", "before_commit", "after_commit"])
def test_commit_fault_points_at_parallelism_2(brokers, topic, tmp_path, point):
    """Two sink subtasks commit independently: a kill after one of them committed checkpoint N
    leaves the other's transaction to be redone, never the first one's to be written again."""
    j = KafkaJob(tmp_path, brokers, topic(), parallelism=2, rows=24000)
    r = j.run(fault=f"{point}:exit:3")
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    j.run_to_end()
    j.check()


# The second sink subtask's commit of checkpoint 2 is held back 2 s (the 4th before_commit),
# the first one's commit of 2 exits the process (the 3rd after_commit): checkpoint 2 is
# committed by one subtask and not by the other.
PARTIAL_COMMIT = "before_commit:delay=2000:4,after_commit:exit:3"


def test_partial_commit_across_subtasks_is_redone(brokers, topic, tmp_path):
    j = KafkaJob(tmp_path, brokers, topic(), parallelism=2, rows=24000)
    r = j.run(fault=PARTIAL_COMMIT)
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"subtask \d: checkpoint 2's Kafka transaction was not committed \(the last "
                     r"checkpoint committed there: 1\); its \d+ records?, kept in the checkpoint, "
                     r"were written again", r.stderr), r.stderr[-3000:]
    assert "restoring the checkpoint before" not in r.stderr
    j.check()


def test_partial_commit_across_subtasks_with_rewind_is_the_known_limit(brokers, topic, tmp_path):
    """With redo_max_bytes = '0' the same kill can only rewind: subtask 1's lost checkpoint 2
    restores checkpoint 1 for the whole job, and subtask 0, which had committed 2, writes its
    interval again. This pins the limit down (it fails once someone removes it): every window
    is there, and those of subtask 0's interval 2 are there twice."""
    j = KafkaJob(tmp_path, brokers, topic(), parallelism=2, rows=24000, sink_options=REWIND)
    r = j.run(fault=PARTIAL_COMMIT)
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "restoring the checkpoint before 2" in r.stderr, r.stderr[-3000:]
    assert "already holds the committed output of checkpoint 2" in r.stderr, r.stderr[-3000:]
    got, want = windows_of(read_committed(brokers, j.out_topic)), expected_windows(j.rows)
    assert set(got) == set(want)
    dup = [w for w, c in got.items() if c > 1]
    assert dup and all(c <= 2 for c in got.values()), sorted(got.items())[:5]


@pytest.mark.parametrize("parallelism,mode", [(1, "redo"), (2, "redo"), (1, "rewind")])
def test_random_sigkills_then_finish(brokers, topic, tmp_path, parallelism, mode):
    """Six SIGKILLs, each at once or a random moment (0-150 ms) after 1-4 more checkpoints
    completed (so some land between a checkpoint's completion and its Kafka commit), then a run
    to the end."""
    rnd = random.Random(7 + parallelism)
    random.seed(11 + parallelism)
    j = KafkaJob(tmp_path, brokers, topic(), parallelism=parallelism, rows=100000, rate=10000,
                 sink_options=EOS if mode == "redo" else REWIND)
    kills = 0
    for _ in range(6):
        status = j.run_killed_after(rnd.randint(1, 4), jitter_s=0.15)
        if status == 0:
            break  # it finished before the kill: another run would start afresh
        assert status == -signal.SIGKILL, j.logs[-1][-3000:]
        kills += 1
    assert kills >= 5, f"only {kills} kills landed before the job finished"
    if kills == 6:
        j.run_to_end()
    j.check()
    print(f"{kills} kills; reruns that redid a lost commit: "
          f"{sum('were written again' in log for log in j.logs)}, that rewound: "
          f"{sum('restoring the checkpoint before' in log for log in j.logs)}")
    restored = sum("restore point: checkpoint" in log for log in j.logs)
    assert restored >= 5, "the reruns did not restore checkpoints: the kills exercised nothing"


def test_lost_commit_redoes_the_interval_from_the_checkpoint(brokers, topic, tmp_path):
    """A kill between COMPLETED-N and the Kafka commit of N: the rerun restores N, finds N's
    marker missing, writes N's rows again from the checkpoint in a new transaction."""
    j = KafkaJob(tmp_path, brokers, topic())
    r = j.run(fault="after_completed:exit:3")
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    n = j.completed()[-1]
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"restore point: checkpoint {n} " in r.stderr, r.stderr[-3000:]
    assert re.search(rf"checkpoint {n}'s Kafka transaction was not committed \(the last "
                     rf"checkpoint committed there: {n - 1}\); its \d+ records?, kept in the "
                     r"checkpoint, were written again and committed", r.stderr), r.stderr[-3000:]
    assert "restoring the checkpoint before" not in r.stderr
    j.check()


def test_lost_commit_rewinds_to_the_checkpoint_before(brokers, topic, tmp_path):
    """The same kill with redo_max_bytes = '0': recover reports CK_EREWIND naming N, the CLI
    restores the newest completed checkpoint below N (kept on disk while N is unconfirmed) and
    the interval is replayed into a new transaction."""
    j = KafkaJob(tmp_path, brokers, topic(), sink_options=REWIND)
    r = j.run(fault="after_completed:exit:3")
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    n = j.completed()[-1]
    meta = j.ckpt / "v1" / "_meta"
    assert not (meta / f"confirmed-{n}").exists()
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    log = r.stderr
    assert f"restore point: checkpoint {n} " in log, log[-3000:]
    assert f"checkpoint {n}'s Kafka transaction was not committed" in log, log[-3000:]
    assert f"restoring the checkpoint before {n}" in log, log[-3000:]
    m = re.search(r"restore point: checkpoint (\d+) \([^)]*\): the newer checkpoint's output was "
                  r"not committed", log)
    assert m and int(m.group(1)) < n, log[-3000:]
    assert int(m.group(1)) == n - 1
    j.check()


def test_damaged_newest_snapshot_is_refused_over_committed_kafka_output(brokers, topic, tmp_path):
    """Issue 12 part 3: a committed Kafka transaction cannot be taken back, so a rerun whose
    newest snapshot is damaged must not fall back to the checkpoint before it (the rows after it
    would be published twice, as the file sink's fallback in test_damage.py would not): refused,
    naming the file, the sink and the marker whose removal accepts the duplicates; nothing more
    reaches the topic."""
    j = KafkaJob(tmp_path, brokers, topic())
    r = j.run(fault="after_commit:exit:3")
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    n = j.completed()[-1]
    snap = j.ckpt / "v1" / "0" / f"checkpoint-{n}.snap"
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0xFF
    snap.write_bytes(bytes(data))
    before = len(read_committed(brokers, j.out_topic))
    r = j.run()
    assert r.returncode == 1, r.stderr[-3000:]
    assert f"could not restore checkpoint {n}" in r.stderr, r.stderr[-3000:]
    assert str(snap) in r.stderr and "damaged" in r.stderr
    assert "sink 'kafka_sink' cannot take back output it committed" in r.stderr
    assert f"_meta/completed-{n}" in r.stderr
    assert "fell back" not in r.stderr
    assert len(read_committed(brokers, j.out_topic)) == before


# ---------------------------------------------------------------- the seed's bug

SEED_PARTS, SEED_KEYS, SEED_EVENTS = 4, 5, 8000


def seed_event(i):
    return {"id": i, "k": i % SEED_KEYS, "ts": BASE_TS + 10 * i, "v": (i * 7) % 13}


def seed_expected():
    acc = {}
    for i in range(SEED_EVENTS):
        e = seed_event(i)
        ws = e["ts"] - e["ts"] % 1000
        n, t = acc.get((e["k"], ws), (0, 0))
        acc[(e["k"], ws)] = (n + 1, t + e["v"])
    return Counter((k, ws, ws + 1000, n, t) for (k, ws), (n, t) in acc.items())


@pytest.mark.parametrize("resume", [True, False], ids=["resume", "fresh_shows_the_bug"])
def test_seed_kill_midstream_more_input_rerun(brokers, topic, tmp_path, resume):
    """Seed 001: a Kafka input topic, `clink run` SIGKILLed mid-stream with windows already
    committed, the rest of the input produced, the same command again: no window is committed
    twice (read_committed). With --fresh on the rerun (the old behaviour: no resume) the same
    check finds windows committed twice, so it is a check that can fail."""
    src, dst = topic("in", SEED_PARTS), topic()
    half = SEED_EVENTS // 2
    produce(brokers, src, [(i % SEED_PARTS, seed_event(i)) for i in range(half)])
    sql = f"""
CREATE TABLE ev (id BIGINT, k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'kafka', brokers = '{brokers}', topic = '{src}', auto_offset_reset = 'earliest',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'kafka', brokers = '{brokers}', topic = '{dst}'{EOS});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM ev GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""
    j = KafkaJob(tmp_path, brokers, dst, sql=sql, parallelism=2)
    first = j.start()
    try:
        wait_until("committed windows and two completed checkpoints",
                   lambda: first.poll() is not None or
                   (len(j.completed()) >= 2 and len(read_committed(brokers, dst)) >= 50),
                   interval=0.2)
        assert first.poll() is None, "the unbounded job ended:\n" + first.log_path.read_text()[-3000:]
    finally:
        j.kill(first)
    assert first.returncode == -signal.SIGKILL
    before = j.completed()[-1]
    committed_before = len(read_committed(brokers, dst))
    assert committed_before >= 50

    # the rest of the input, then a late sentinel per partition that moves the watermark past
    # the last real window (its own window never fires: the input does not end)
    rest = [(i % SEED_PARTS, seed_event(i)) for i in range(half, SEED_EVENTS)]
    sentinels = [(p, {"id": -1, "k": 99, "ts": BASE_TS + 10 ** 8, "v": 0})
                 for p in range(SEED_PARTS)]
    produce(brokers, src, rest + sentinels)

    want = seed_expected()
    second = j.start(*([] if resume else ["--fresh"]))
    try:
        wait_until("every window in the output topic",
                   lambda: second.poll() is not None or
                   set(want) <= set(windows_of(read_committed(brokers, dst))), interval=0.5)
        assert second.poll() is None, "the rerun ended:\n" + second.log_path.read_text()[-3000:]
        second.send_signal(signal.SIGINT)  # drains: a final checkpoint, committed
        err = j.finished(second)
    finally:
        if second.poll() is None:
            j.kill(second)
    assert second.returncode == 0, err[-3000:]
    got = windows_of(read_committed(brokers, dst))
    if resume:
        assert f"restore point: checkpoint {before} " in err, err[-3000:]
        assert_exactly(got, want)
    else:
        dup = {w: c for w, c in got.items() if c > 1}
        assert set(got) == set(want)
        assert len(dup) == committed_before, \
            f"without resume {len(dup)} windows were committed twice, not {committed_before}"
