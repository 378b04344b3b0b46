#!/usr/bin/env python3
"""Serve ClickHouse 26.9 on loopback from the chdb-core wheel.

DESIGN
  chdb-core bundles ClickHouse as a library; its one-shot query() runs
  clickhouse-local, which reads config.xml from the working directory (listen
  host, TCP and HTTP ports, users_config). SYSTEM START LISTEN TCP / HTTP then
  starts the server's own native-protocol and HTTP handlers, which serve for as
  long as that query runs, so the query ends with one that never ends
  (sleepEachRow over system.numbers, no execution time limit). Tables live in
  DIR/data and survive a SIGKILL; SIGTERM stops the process.

  scripts/services.sh writes DIR/config.xml and DIR/users.xml and starts this;
  its readiness check proves the listening socket belongs to this process.

Usage: serve.py --dir DIR
"""
import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="config.xml, users.xml and data/ live here")
    args = ap.parse_args()
    os.chdir(args.dir)
    if not os.path.exists("config.xml"):
        sys.exit(f"serve.py: no config.xml in {args.dir}")
    import chdb._chdb as chdb  # late: the error above should not need the wheel

    os.makedirs("data", exist_ok=True)
    keep_alive = ("SYSTEM START LISTEN TCP; SYSTEM START LISTEN HTTP; "
                  "SELECT sleepEachRow(1) FROM system.numbers "
                  "SETTINGS max_execution_time = 0, max_block_size = 1")
    chdb.query(keep_alive, "TabSeparated", path=os.path.join(args.dir, "data"))
    # The keep-alive query ends only when the server is told to stop (or a KILL QUERY
    # matched it): exit non-zero so services.sh does not take it for a clean stop.
    sys.exit("serve.py: the keep-alive query ended; the server stopped")


if __name__ == "__main__":
    main()
