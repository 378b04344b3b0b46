/*
 * DESIGN: fault points — named places in the checkpoint protocol where a test can make the
 * process die (or stall) at an exact step rather than at a wall-clock moment.
 *
 * Armed from the environment: CLINK_FAULT="<point>:<action>[:<ordinal>]" where action is
 * exit (exit(86) at once, no cleanup), abort (SIGABRT), kill (SIGKILL to ourselves),
 * delay=<ms> (a sleep from the n-th time on, every time), stall=<ms> (a sleep at the n-th time
 * only, as the others: a checkpoint step that is slow once, so the checkpoint times out), or
 * fail (the step reports an I/O error, so the checkpoint fails and the job rewinds); ordinal n
 * fires on the n-th time the point is reached (default 1), "n+" on the n-th time and every time
 * after (a failure that recurs on every restart). Several
 * points may be armed, separated by ','. The table below is the one list of points: tests
 * check that each has a call site and a test that kills there (tests/integration).
 *
 * Threads: any; hit counters are atomics.
 */
#ifndef CK_CHECKPOINT_FAULT_H
#define CK_CHECKPOINT_FAULT_H

/*  id                     name                      where */
#define CK_FAULT_TABLE(X)                                                                     \
  X(BEFORE_PREPARE,        "before_prepare",        "a sink is about to prepare for barrier N") \
  X(AFTER_PREPARE,         "after_prepare",         "a sink prepared for barrier N; its subtask's snapshot is not yet written") \
  X(BEFORE_SNAPSHOT_WRITE, "before_snapshot_write", "a subtask holds its state for N in memory, not yet on disk") \
  X(AFTER_SNAPSHOT_WRITE,  "after_snapshot_write",  "a subtask's snapshot for N is durable, not yet acknowledged") \
  X(BEFORE_COMPLETED,      "before_completed",      "every subtask acknowledged N; the COMPLETED marker is not yet written") \
  X(AFTER_COMPLETED,       "after_completed",       "COMPLETED-N is durable; no sink has committed N") \
  X(BEFORE_COMMIT,         "before_commit",         "a sink is about to commit N") \
  X(AFTER_COMMIT,          "after_commit",          "a sink committed N externally; CONFIRMED-N is not yet written") \
  X(BEFORE_RESTORE,        "before_restore",        "a rerun chose its restore point and has restored nothing yet")

/* Points inside one connector's own commit protocol: every sink passes the points above,
 * only that connector these (tests/checkpoint reads the two tables apart). */
#define CK_FAULT_SINK_TABLE(X)                                                                \
  X(CH_AFTER_MOVE,         "ch_after_move",         "the ClickHouse sink moved one partition of a stage into the target; the rest of the stage is not yet published")

typedef enum ck_fault_point {
#define CK_X_FAULT(id, name, where) CK_FAULT_##id,
  CK_FAULT_TABLE(CK_X_FAULT)
  CK_FAULT_SINK_TABLE(CK_X_FAULT)
#undef CK_X_FAULT
  CK_FAULT__COUNT
} ck_fault_point_t;

const char *ck_fault_name(ck_fault_point_t point);
/* Called at each point; does nothing unless CLINK_FAULT arms it. Returns CK_EIO (with err
 * filled) when the point is armed with `fail`, else 0. */
struct ck_error;
int ck_fault(ck_fault_point_t point);
int ck_fault_err(ck_fault_point_t point, struct ck_error *err);

#endif
