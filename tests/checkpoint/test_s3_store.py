"""Checkpoints on S3: `--checkpoint-dir s3://bucket/prefix` against the real SeaweedFS that
scripts/services.sh starts. The same job as test_eos_file.py (a bounded generator through
windows into the exactly-once file sink) is killed at the checkpoint protocol's fault points
and with SIGKILL at random moments, with every checkpoint on S3 and nothing of them on local
disk; reruns resume from S3 and the output holds every window exactly once, judged against
conftest's Python recomputation of the generator. What the bucket holds is read back with
curl's own SigV4 signing (not clink's) and must be the documented layout. Bad stores fail
with a message that names the store and what is wrong.
"""
import json
import os
import re
import subprocess
import uuid
import xml.etree.ElementTree as ET

import pytest

from .conftest import CLINK, die_at, fault_points, Job

EOS = ", delivery_guarantee = 'exactly_once'"


def s3_env():
    for name in ("CLINK_S3_ENDPOINT", "CLINK_S3_ACCESS_KEY", "CLINK_S3_SECRET_KEY",
                 "CLINK_S3_BUCKET"):
        if not os.environ.get(name):
            pytest.fail(f"{name} is not set: start the services and export their settings "
                        "first: scripts/services.sh start && eval \"$(scripts/services.sh env)\"")
    return {"AWS_ACCESS_KEY_ID": os.environ["CLINK_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": os.environ["CLINK_S3_SECRET_KEY"],
            "AWS_ENDPOINT_URL_S3": os.environ["CLINK_S3_ENDPOINT"],
            "AWS_REGION": "us-east-1"}


def curl_s3(method, path, data=None, query=""):
    """One request signed by curl (an implementation independent of clink's)."""
    url = os.environ["CLINK_S3_ENDPOINT"] + path + (("?" + query) if query else "")
    cmd = ["curl", "-sS", "--fail-with-body", "--max-time", "60", "--aws-sigv4",
           "aws:amz:us-east-1:s3", "--user",
           os.environ["CLINK_S3_ACCESS_KEY"] + ":" + os.environ["CLINK_S3_SECRET_KEY"],
           "-X", method, url]
    if data is not None:
        cmd[-3:-3] = ["-T", "-"]  # an upload: curl signs its payload right (not so with --data-binary)
    r = subprocess.run(cmd, input=data, capture_output=True, timeout=90)
    assert r.returncode == 0, f"curl {method} {path}: {r.stdout[-500:]!r} {r.stderr[-500:]!r}"
    return r.stdout


def list_keys(bucket, prefix):
    """Every key under prefix (ListObjectsV2, every page)."""
    keys, token = [], None
    ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    while True:
        q = "list-type=2&prefix=" + prefix.replace("/", "%2F")
        if token:
            q = "continuation-token=" + token + "&" + q
        root = ET.fromstring(curl_s3("GET", f"/{bucket}", query=q))
        keys += [k.text for k in root.iterfind(".//s3:Contents/s3:Key", ns)]
        nxt = root.find("s3:NextContinuationToken", ns)
        if root.findtext("s3:IsTruncated", namespaces=ns) != "true" or nxt is None:
            return keys
        token = nxt.text


def shared_bucket():
    """The tests' one bucket (scripts/services.sh makes it): each test writes under a prefix of
    its own, since SeaweedFS gives every bucket volumes of its own."""
    s3_env()
    return os.environ["CLINK_S3_BUCKET"]


@pytest.fixture
def bucket():
    return shared_bucket()


class S3Job(Job):
    def __init__(self, tmp_path, bucket, prefix=None, **kw):
        super().__init__(tmp_path, sink_options=EOS, **kw)
        self.bucket = bucket
        self.prefix = prefix or "ckpt-" + uuid.uuid4().hex[:12] + "/jobs/a"
        self.ckpt = f"s3://{bucket}/{self.prefix}"

    def env(self, fault=None):
        env = super().env(fault)
        env.update(s3_env())
        return env

    def keys(self):
        return list_keys(self.bucket, self.prefix + "/")


def assert_layout(j):
    keys = j.keys()
    assert keys, "nothing was written to the bucket"
    base = j.prefix + "/v1/"
    bad = [k for k in keys if not k.startswith(base)]
    assert not bad, f"keys outside {base}: {bad[:5]}"
    rel = [k[len(base):] for k in keys]
    snaps = [r for r in rel if re.fullmatch(r"\d+/checkpoint-\d+\.snap", r)]
    assert snaps, f"no snapshot objects: {rel[:20]}"
    assert "_meta/fingerprint" in rel
    assert any(re.fullmatch(r"_meta/completed-\d+", r) for r in rel), rel[:20]
    odd = [r for r in rel if not (r in snaps or r.startswith("_meta/"))]
    assert not odd, f"objects the layout does not have: {odd[:5]}"
    assert not any(".tmp-" in r for r in rel), "a temporary name reached S3"
    return rel


def test_uninterrupted_run_checkpoints_to_s3_only(tmp_path, bucket):
    j = S3Job(tmp_path, bucket, rate=4000, rows=12000)
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in r.stderr
    j.check(exactly_once=True)
    rel = assert_layout(j)
    assert any(re.fullmatch(r"_meta/confirmed-\d+", x) for x in rel)
    assert not (tmp_path / "s3:").exists() and not (tmp_path / "ckpt").exists(), \
        "checkpoints were written to local disk"
    # a snapshot object is the Arrow IPC stream the filesystem store writes
    snap = next(k for k in j.keys() if k.endswith(".snap"))
    body = curl_s3("GET", f"/{bucket}/{snap}")
    assert body[:4] == b"\xff\xff\xff\xff", "not an Arrow IPC stream"


@pytest.mark.parametrize("point", fault_points())
def test_killed_at_fault_points_resumes_from_s3_exactly_once(tmp_path, bucket, point):
    j = S3Job(tmp_path, bucket)
    die_at(j, point)
    r = j.run_to_end()
    assert "restore point: checkpoint" in "".join(j.logs[1:]), j.logs[-1][-3000:]
    j.check(exactly_once=True)
    assert_layout(j)
    assert r.returncode == 0


def test_random_sigkills_then_finish_exactly_once(tmp_path, bucket):
    import random
    j = S3Job(tmp_path, bucket, rows=40000, rate=10000, parallelism=2)
    j.kill_randomly_then_finish(random.Random(2323), min_kills=3)
    j.check(exactly_once=True)
    assert_layout(j)
    ids = [i for run in j.checkpoint_ids() for i in run]
    assert len(ids) == len(set(ids)), "a checkpoint id was used twice across reruns"


def test_unreachable_store_is_a_clear_error(tmp_path):
    j = S3Job(tmp_path, "no-such-store", prefix="jobs/a", rows=100)
    env = j.env()
    env["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:1"
    r = subprocess.run(j.args(), capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0
    assert "s3://no-such-store/jobs/a" in r.stderr, r.stderr[-2000:]
    assert "127.0.0.1:1" in r.stderr


def test_missing_bucket_and_bad_secret_are_named(tmp_path, bucket):
    j = S3Job(tmp_path, "clink-missing-" + uuid.uuid4().hex[:8], rows=100)
    r = subprocess.run(j.args(), capture_output=True, text=True, timeout=60, env=j.env())
    assert r.returncode != 0
    assert "NoSuchBucket" in r.stderr and "create the bucket" in r.stderr, r.stderr[-2000:]
    j = S3Job(tmp_path, bucket, rows=100)
    env = j.env()
    env["AWS_SECRET_ACCESS_KEY"] = "wrong-secret-123"
    r = subprocess.run(j.args(), capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0
    assert "403" in r.stderr, r.stderr[-2000:]
    assert "wrong-secret-123" not in r.stderr


def test_no_credentials_names_the_variables(tmp_path, bucket):
    j = S3Job(tmp_path, bucket, rows=100)
    env = j.env()
    env.pop("AWS_ACCESS_KEY_ID")
    r = subprocess.run(j.args(), capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0
    assert "AWS_ACCESS_KEY_ID" in r.stderr, r.stderr[-2000:]


def test_bad_url_is_refused(tmp_path):
    j = Job(tmp_path, rows=100)
    args = j.args()
    args[args.index("--checkpoint-dir") + 1] = "s3://Bad_Bucket/x"
    r = subprocess.run(args, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **s3_env()))
    assert r.returncode != 0
    assert "lowercase" in r.stderr, r.stderr[-2000:]


def fetch_with_curl(j, dest):
    """The store's objects copied to a local directory by curl (not by clink)."""
    base = j.prefix + "/"
    for k in j.keys():
        p = dest / k[len(base):]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(curl_s3("GET", f"/{j.bucket}/{k}"))


def clink_tool(env, *args):
    return subprocess.run([CLINK, *args], capture_output=True, text=True, env=env, timeout=120)


def test_state_tools_read_an_s3_store_as_they_read_a_local_one(tmp_path, bucket):
    """state-cat/diff/export/query, checkpoint-verify and incident collect given s3://… answer
    what they answer for the same objects copied to disk by curl."""
    j = S3Job(tmp_path, bucket, rate=4000, rows=8000)
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    local = tmp_path / "copy"
    fetch_with_curl(j, local)
    ids = sorted(int(p.name.split("-")[1]) for p in (local / "v1/_meta").glob("completed-*"))
    assert len(ids) >= 2, ids
    env = j.env()
    for args in (["state-cat", "--dir={}"], ["state-cat", "--dir={}", f"--id={ids[-2]}"],
                 ["state-diff", "{}@%d" % ids[-2], "{}"],
                 ["state-query", "--checkpoint-dir={}",
                  "--sql=SELECT operator, count(*) AS n FROM state GROUP BY operator"],
                 ["checkpoint-verify", "--dir={}", "--json"]):
        on_s3 = clink_tool(env, *[a.replace("{}", j.ckpt) for a in args])
        on_disk = clink_tool(env, *[a.replace("{}", str(local)) for a in args])
        ok = (0, 1) if args[0] == "state-diff" else (0,)  # 1: the two differ
        assert on_s3.returncode == on_disk.returncode and on_s3.returncode in ok, \
            (args, on_s3.stderr[-2000:], on_disk.stderr[-2000:])
        out_s3 = on_s3.stdout.replace(j.ckpt, "DIR")
        out_disk = on_disk.stdout.replace(str(local), "DIR")
        if args[0] == "checkpoint-verify":  # names the directory it read: a copy for S3
            out_s3 = re.sub(r'"dir":"[^"]*"', "", out_s3)
            out_disk = re.sub(r'"dir":"[^"]*"', "", out_disk)
        assert out_s3 == out_disk, (args, out_s3[:500], out_disk[:500])
        assert out_s3.strip(), args
    for fmt in ("arrow", "parquet"):
        a, b = tmp_path / f"s3.{fmt}", tmp_path / f"disk.{fmt}"
        assert clink_tool(env, "state-export", f"--dir={j.ckpt}", f"--out={a}",
                          f"--format={fmt}").returncode == 0
        assert clink_tool(env, "state-export", f"--dir={local}", f"--out={b}",
                          f"--format={fmt}").returncode == 0
        assert a.read_bytes() == b.read_bytes() and a.stat().st_size > 0
    bundle = tmp_path / "bundle"
    r = clink_tool(env, "incident", "collect", "--checkpoint-dir", j.ckpt, "--out", str(bundle))
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["collected"]["checkpoint_dir"] == j.ckpt, manifest["collected"]
    assert any((bundle / "checkpoints").rglob("completed-*")), list(bundle.rglob("*"))[:20]
    # a store that holds nothing is named
    r = clink_tool(env, "state-cat", f"--dir=s3://{bucket}/nothing-{uuid.uuid4().hex[:8]}")
    assert r.returncode != 0 and "holds nothing" in r.stderr, r.stderr
