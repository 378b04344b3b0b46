"""An exactly-once Kafka sink on the cluster, under SIGKILLs of a worker and of the coordinator
(restarted with the same --ha-dir, it recovers the job from its manifest, raises its epoch and
restarts the job from its last checkpoint): a read_committed reader finds every window exactly
once, with the values recomputed in Python from the generator's definition.
"""
import re

import pytest

from .conftest import load_checkpoint_module, wait_for

eos = load_checkpoint_module("test_eos_kafka")
brokers = eos.brokers
topic = eos.topic


def test_exactly_once_kafka_through_worker_and_coordinator_kills(cluster, tmp_path, brokers, topic):
    out_topic = topic()
    rows = 36000
    sql = tmp_path / "job.sql"
    sql.write_text(eos.datagen_sql(brokers, out_topic, rows, 4000, eos.EOS))
    c = cluster(interval_ms=200)
    c.start_coordinator(ha=True)
    c.start_worker("worker-1")
    c.start_worker("worker-2")
    jid = c.submit(sql, parallelism=2)
    c.wait_status(jid, {"RUNNING"})
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 3, 60, "three checkpoints")

    # a worker dies and comes back
    c.workers["worker-1"].kill()
    wait_for(lambda: "restart waiting for capacity" in c.coordinator.text(), 20, "the restart")
    c.start_worker("worker-1")
    wait_for(lambda: c.job(jid)["status"] == "RUNNING" and c.job(jid)["last_checkpoint"] >
             c.job(jid)["restore_point"] + 1, 60, "checkpoints after the restart")

    # the coordinator dies and a new one takes over the HA directory
    c.coordinator.kill()
    first_log = c.coordinator.text()
    c.start_coordinator(ha=True)
    log = wait_for(lambda: "recovered from the HA directory" in c.coordinator.text() and
                   c.coordinator.text(), 20, "the job's recovery")
    assert "with epoch 2" in log, log
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=180)
    assert job["status"] == "FINISHED", job
    log = c.coordinator.text()
    assert re.search(r"job_id=1 restore point: checkpoint \d+", log[len(first_log):]), log
    for w in c.workers.values():
        eos.sanitizers_quiet(w.text())
    got = eos.windows_of(eos.read_committed(brokers, out_topic))
    eos.assert_exactly(got, eos.expected_windows(rows))


@pytest.mark.parametrize("sink_options", [eos.EOS, eos.REWIND], ids=["redo", "rewind"])
def test_coordinator_dies_between_completed_and_commit(cluster, tmp_path, brokers, topic,
                                                       sink_options):
    """The coordinator exits at the fault point right after COMPLETED-N is durable, before any
    sink heard COMMIT(N): its successor restores N, whose transactions were prepared but never
    committed — the sinks redo the interval from the checkpoint (or, with redo_max_bytes = '0',
    report the lost commit and the job rewinds to the checkpoint before N)."""
    out_topic = topic()
    rows = 24000
    sql = tmp_path / "job.sql"
    sql.write_text(eos.datagen_sql(brokers, out_topic, rows, 4000, sink_options))
    c = cluster(interval_ms=200)
    c.start_coordinator(ha=True, env={"CLINK_FAULT": "after_completed:exit:4"})
    c.start_worker("worker-1", slots=2)
    jid = c.submit(sql, parallelism=2)
    dead = c.coordinator
    wait_for(lambda: dead.p.poll() is not None, 60, "the coordinator to hit the fault point")
    assert dead.p.returncode == eos.FAULT_EXIT, dead.text()
    c.start_coordinator(ha=True)
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=180)
    assert job["status"] == "FINISHED", job
    log = c.coordinator.text()
    assert re.search(r"job_id=1 restore point: checkpoint 4 \(latest_completed=4 latest_confirmed=3",
                     log), log
    if sink_options == eos.REWIND:
        assert "restoring the checkpoint before 4" in log, log
    got = eos.windows_of(eos.read_committed(brokers, out_topic))
    eos.assert_exactly(got, eos.expected_windows(rows))
