#!/usr/bin/env python3
"""Small ClickHouse and Kafka chores for run.sh (addresses from scripts/services.sh env):
  ch.py reset INIT.sql      recreate the 'readings' topic (1 partition) and the table
  ch.py count               print the rows and distinct windows in the table
  ch.py atleast N           exit 0 when the table holds at least N rows
  ch.py windows N           exit 0 when the table holds at least N distinct windows
"""
import os
import sys
import time

from clickhouse_driver import Client

TABLE = "sensor_window_stats"


def client():
    return Client(host=os.environ["CLINK_CLICKHOUSE_HOST"], port=int(os.environ["CLINK_CLICKHOUSE_PORT"]),
                  user="clink", password="clink")


def counts():
    return client().execute(f"SELECT count(), uniqExact(sensor_id, window_start) FROM {TABLE}")[0]


def reset(init_sql):
    from confluent_kafka.admin import AdminClient
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
    from kafka_topic import create_topic  # waits until every partition has a leader
    admin = AdminClient({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    if "readings" in admin.list_topics(timeout=10).topics:
        admin.delete_topics(["readings"])["readings"].result(30)
        deadline = time.monotonic() + 30
        while "readings" in admin.list_topics(timeout=10).topics:
            if time.monotonic() > deadline:
                sys.exit("the old 'readings' topic did not go away")
            time.sleep(0.2)
    deadline = time.monotonic() + 30
    while True:
        try:
            create_topic(os.environ["CLINK_KAFKA_BROKERS"], "readings", 1, timeout=30)
            break
        except Exception as e:  # the deletion may still be settling on the broker
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    c = client()
    c.execute(f"DROP TABLE IF EXISTS {TABLE}")
    c.execute(open(init_sql).read())


def main():
    cmd = sys.argv[1]
    if cmd == "reset":
        reset(sys.argv[2])
    elif cmd == "count":
        rows, windows = counts()
        print(f"[run.sh] ClickHouse holds {rows} rows for {windows} windows")
    elif cmd == "atleast":
        sys.exit(0 if counts()[0] >= int(sys.argv[2]) else 1)
    elif cmd == "windows":
        sys.exit(0 if counts()[1] >= int(sys.argv[2]) else 1)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a server that is restarting: the caller polls again
        if sys.argv[1] == "reset":
            raise
        print(f"[run.sh] ClickHouse: {e}".splitlines()[0], file=sys.stderr)
        sys.exit(2)
