"""Aggregate UDFs in C keep their accumulators in checkpointed state (serialise / deserialise,
docs/sql.md "User-defined functions in C"): conftest's windowed job with its SUM computed by the
sample library's my_sum and a distinct count by uniq_count (whose accumulator owns heap memory),
SIGKILLed at random moments and rerun until it finishes, writes every window exactly once with
the values of conftest's Python recomputation of the generator.
"""
import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from .conftest import BASE_TS, CLINK, KEYS, V_PERIOD, Job

EOS = ", delivery_guarantee = 'exactly_once'"


def sample_lib():
    given = os.environ.get("CLINK_UDF_SAMPLE")
    path = Path(given) if given else Path(CLINK).resolve().parents[2] / "tests/udf/libclink_udf_sample.so"
    assert path.exists(), f"the sample UDF library is not built: {path}"
    return str(path)


class UdfJob(Job):
    def __init__(self, tmp_path, **kw):
        super().__init__(tmp_path, sink_options=EOS, **kw)
        lib = sample_lib()
        sql = self.sql.read_text()
        sql = sql.replace("CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, "
                          "n BIGINT, total BIGINT)",
                          "CREATE FUNCTION my_sum AS 'my_sum_udf' USING '%s' LANGUAGE C;\n"
                          "CREATE FUNCTION uniq_count AS 'uniq_count_udf' USING '%s' LANGUAGE C;\n"
                          "CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, "
                          "n BIGINT, total BIGINT, u BIGINT)" % (lib, lib))
        sql = sql.replace("COUNT(*) AS n, SUM(v) AS total",
                          "COUNT(*) AS n, my_sum(v) AS total, uniq_count(v) AS u")
        assert "my_sum(v)" in sql and "u BIGINT" in sql
        self.sql.write_text(sql)

    def check_distinct_counts(self):
        want = {}
        for i in range(self.rows):
            k, ts, v = i % KEYS, BASE_TS + 10 * i, 5 + 3 * (i % V_PERIOD)
            want.setdefault((k, ts - ts % 1000), set()).add(v)
        got = Counter()
        for p in self.outputs():
            for line in Path(p).read_text().splitlines():
                r = json.loads(line)
                assert r["u"] == len(want[(r["k"], r["window_start"])]), r
                got[(r["k"], r["window_start"])] += 1
        assert set(got) == set(want)


def test_uninterrupted_udf_job_matches_python(tmp_path):
    j = UdfJob(tmp_path, rate=0, rows=5000)
    r = j.run()
    assert r.returncode == 0, r.stderr[-2000:]
    j.check(exactly_once=True)
    j.check_distinct_counts()


@pytest.mark.parametrize("parallelism", [1, 3])
def test_udf_accumulators_survive_random_sigkills_exactly_once(tmp_path, parallelism):
    rnd = random.Random(2026 + parallelism)
    j = UdfJob(tmp_path, parallelism=parallelism, rows=60000, rate=10000)
    # one run long enough to complete checkpoints even on a loaded machine, so that a rerun
    # restores accumulators, then the random kills
    assert j.run_killed(2.5) != 0
    j.kill_randomly_then_finish(rnd, min_kills=3)
    j.check(exactly_once=True)
    j.check_distinct_counts()


def test_state_cat_shows_udf_accumulators(tmp_path):
    j = UdfJob(tmp_path, rows=60000, rate=10000)
    assert j.run_killed(2.5) != 0
    r = subprocess.run([CLINK, "state-cat", "--dir", str(j.ckpt)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    windows = [json.loads(l)["value"] for l in r.stdout.splitlines() if '"window_agg"' in l]
    windows = [w for w in windows if "window_start" in w]  # not the operator's header entry
    udf = [a for w in windows for a in w.get("aggregates", []) if a["fn"] == "UDF"]
    assert udf, r.stdout[-2000:]
    # my_sum's form is (sum, n) as two little-endian int64: n is the window's COUNT(*)
    for w in windows:
        n = w["aggregates"][0]["count"]
        state = bytes.fromhex(w["aggregates"][1]["state"])
        assert int.from_bytes(state[8:16], "little") == n, w
