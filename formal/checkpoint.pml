/*
 * DESIGN: the checkpoint protocol of DESIGN.md §4 as src/checkpoint/{coord,lineage,store}.c,
 * src/runtime/exec.c, src/cli/cmd_run.c, src/cluster/coordinator.c and the sinks implement it,
 * as one Promela state machine for Spin (docs/protocol.md is the reader's page).
 *
 * Style: a single process whose loop takes one atomic action at a time, each action one
 * decision point of the engine (its name is the trace event the engine emits, phase 2). Spin
 * explores every order of the enabled actions, faults included, so "every interleaving" means
 * every order of these steps.
 *
 * The job: two source->sink chains (tasks), each reading its own partition of L records.
 *   task 0 ends in a RECOVERABLE sink (staged/prepared: PostgreSQL's PREPARE TRANSACTION
 *          'clink_<job>_<task>_<N>', the exactly-once file sink's staging file): a prepared
 *          interval survives any death; commit(N) and recover(R) commit every own prepared
 *          interval <= N (R); recover(R) rolls back those above R; a fresh open rolls back all.
 *   task 1 ends in a NON-RECOVERABLE sink (Kafka transactions): prepare(N) puts the marker
 *          "ckpt=N" into the transaction; only the producer that opened it can commit it; a new
 *          producer's init_transactions fences the old one and aborts what it left; the broker
 *          may lose/expire a prepared transaction. recover(R) reads the marker: >= R committed;
 *          below R: redo R's kept rows (the state holds them) unless an older checkpoint's
 *          transaction ("prev") was lost too, then CK_EREWIND: restore below R.
 *
 * Durable state (survives every death): the checkpoint directory (snapshot files per task and
 * id, COMPLETED/CONFIRMED markers, run-base, clean-finish, fingerprint), the PostgreSQL
 * server's prepared transactions, the broker's transactions and marker, and the outputs.
 * Volatile state: one coordinator process (embedded: the whole `clink run`; cluster: the
 * coordinator, epoch >= 1) and its current execution (deployment).
 *
 * Faults (each bounded by a budget below): process death at any step (crash), an execution's
 * failure at any step (a worker death, a task error: exec_fail), a snapshot write failure,
 * a COMPLETED marker write failure, a broker outage at commit, the broker losing a prepared
 * transaction; in the cluster a superseded coordinator that keeps running and sends a stale
 * trigger, and a lost worker whose task still writes a snapshot late.
 *
 * Oracle (ghost variables, independent of the engine's rules): out0/out1 count how many
 * times each input position is in committed output. A lineage starts when the directory
 * is new or the previous run finished its input (the user expects the whole output again).
 *
 * Mutants: each -D<name> switches one rule off (docs/protocol.md lists them).
 */

#ifndef L
#define L 2            /* records per partition */
#endif
#ifndef MAXID
#define MAXID 3        /* checkpoint ids 1..MAXID */
#endif
#ifndef RETAIN
#define RETAIN 3       /* newest completed checkpoints kept (coord.c default) */
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef EXEC_FAILS
#define EXEC_FAILS 1
#endif
#ifndef SNAP_FAILS
#define SNAP_FAILS 1
#endif
#ifndef MARK_FAILS
#define MARK_FAILS 1
#endif
#ifndef OUTAGES
#define OUTAGES 1
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef RERUNS
#define RERUNS 1       /* runs after a clean finish (a second lineage) */
#endif
#ifndef STALE
#define STALE 1        /* superseded-coordinator frames / late snapshot writes (cluster) */
#endif

#define NT 2
#ifdef CLUSTER
#define cluster true       /* coordinator/worker: epochs >= 1, superseded coordinators, lost workers */
#else
#define cluster false      /* embedded `clink run`: epoch 0 */
#endif
#ifdef F1
#define FINAL_FIRST (pending == final_id)
#else
#define FINAL_FIRST false
#endif
#define NI (MAXID + 1)
#define S(t, n) ((t) * NI + (n))

/* ------------------------------------------------------------------ durable state */
byte snap_pos[NT * NI];   /* 0: no file; else the source position recorded + 1 */
byte snap_from[NT * NI];  /* where the sink's interval of that checkpoint starts */
byte snap_prev[NI];       /* Kafka sink state: older checkpoint still awaiting commit */
bool completed[NI], confirmed[NI];
byte run_base;
bool known;               /* fingerprint written (same pipeline: a different one is refused) */
bool clean_finish;

bool pg_prep[NI];         /* recoverable sink: prepared interval named by checkpoint id */
byte pg_from[NI], pg_to[NI];
bool k_prep[NI];          /* broker: a prepared transaction holding checkpoint id's marker */
byte k_from[NI], k_to[NI];
byte kmarker;             /* marker group: newest checkpoint committed ("ckpt=N") */

/* ------------------------------------------------------------------ oracle */
byte out0[L], out1[L];
bool ghost_done;          /* the last run finished its input (clean-finish durable) */
bool finished_once;

/* ------------------------------------------------------------------ volatile */
bool proc_up;             /* a coordinator process runs */
bool exec_up;             /* its current execution runs */
byte phase;               /* 1 restoring, 2 running */
byte epoch;               /* coordinator epoch (embedded: 0) */
bool first_deploy;        /* this process has not deployed yet (embedded: the rerun) */
byte used;                /* ids handed out by this process (survive its in-process restarts) */
byte below;               /* next deployment restores below this (CK_EREWIND) */
bool restart_due;
byte restore_id, ids_above, next_id, pending, final_id;
byte acks;                /* bit per task */
bool allacked;
byte prep[NT];            /* id each task prepared last */
byte mpos[NT], mfrom[NT], mprev;  /* snapshot taken, not yet written */
byte pos[NT], tfrom[NT];  /* read position; start of the sink's open interval */
byte commit_upto, committed[NT];
byte last_completed, last_confirmed, mem_last, confirm_id;
bool kmine[NI];           /* Kafka transactions this execution prepared */
bool rec[NT];             /* task restored */
byte z_pending;           /* superseded coordinator's checkpoint in flight (0: none) */
byte late_id, late_t, late_pos, late_from; /* a lost worker's unwritten snapshot (id 0: none) */

/* ------------------------------------------------------------------ budgets */
byte b_crash = CRASHES, b_fail = EXEC_FAILS, b_snap = SNAP_FAILS, b_mark = MARK_FAILS;
byte b_outage = OUTAGES, b_lose = LOSSES, b_rerun = RERUNS, b_stale = STALE;

hidden byte i, k, m;      /* scratch: not part of the state */
hidden byte bw, fr;       /* deploy's below and fresh, for its STEP line only */


inline publish0(from, to) {
  i = from;
  do
  :: i < to -> out0[i]++; assert(out0[i] <= 1); i++
  :: else -> break
  od
}
inline publish1(from, to) {
  i = from;
  do
  :: i < to -> out1[i]++; assert(out1[i] <= 1); i++
  :: else -> break
  od
}

/* The execution stops (a failure the coordinator survives): its volatile state goes; what
 * the sinks prepared stays with the server/broker. */
inline exec_down() {
  if   /* ids handed out stay used, durable record or not (cmd_run.c, coordinator.c used_ids) */
  :: next_id > used -> used = next_id
  :: else -> skip
  fi;
  exec_up = 0; phase = 0; pending = 0; allacked = 0; acks = 0; final_id = 0;
  mpos[0] = 0; mpos[1] = 0; mfrom[0] = 0; mfrom[1] = 0; mprev = 0; prep[0] = 0; prep[1] = 0;
  commit_upto = 0; committed[0] = 0; committed[1] = 0; last_completed = 0; last_confirmed = 0;
  confirm_id = 0; next_id = 0; pos[0] = 0; pos[1] = 0; tfrom[0] = 0; tfrom[1] = 0;
  k = 0;
  do
  :: k < NI -> kmine[k] = 0; k++
  :: else -> break
  od;
#ifndef restore_from_memory
  mem_last = 0;
#endif
  restart_due = 1
}

/* lineage.c begin(): where this execution starts. */
inline deploy() {
  /* the id floor: every id with any durable record */
  m = 0; k = 1;
  do
  :: k <= MAXID ->
     if
#ifdef id_reuse
     :: completed[k] || confirmed[k] -> m = k
#else
     :: completed[k] || confirmed[k] || snap_pos[S(0, k)] || snap_pos[S(1, k)] -> m = k
#endif
     :: else -> skip
     fi;
     k++
  :: else -> break
  od;
  restore_id = 0; bw = below; fr = 0;
#ifdef no_clean_finish
  if
  :: !known ->
#else
  if
  :: !known || clean_finish ->
#endif
     /* fresh: a new directory, or the previous run finished its input */
#ifndef no_run_base
     run_base = m;
#endif
     known = 1; clean_finish = 0; fr = 1
  :: else ->
     /* the newest completed checkpoint of this lineage (below `below`) with every file */
     k = MAXID;
#ifdef rerun_starts_fresh
     if
     :: !cluster && first_deploy -> k = 0  /* the old rerun: never looks at the directory */
     :: else -> skip
     fi;
#endif
     do
     :: k > run_base && (below == 0 || k < below) && completed[k] && snap_pos[S(0, k)] &&
        snap_pos[S(1, k)] -> restore_id = k; break
     :: k > run_base && !(completed[k] && (below == 0 || k < below) && snap_pos[S(0, k)] &&
        snap_pos[S(1, k)]) -> k--
     :: k <= run_base -> break
     od
  fi;
#ifdef restore_from_memory
  /* the coordinator's in-memory restore point, advanced before its marker was durable */
  if
  :: mem_last > restore_id && (below == 0 || mem_last < below) && snap_pos[S(0, mem_last)] &&
     snap_pos[S(1, mem_last)] -> restore_id = mem_last
  :: else -> skip
  fi;
#endif
  below = 0;
  ids_above = m;
#ifndef id_reuse
  if
  :: used > ids_above -> ids_above = used
  :: else -> skip
  fi;
#endif
  next_id = ids_above; pending = 0; final_id = 0; acks = 0; allacked = 0;
  commit_upto = restore_id; committed[0] = restore_id; committed[1] = restore_id;
  last_completed = restore_id; last_confirmed = restore_id; mem_last = restore_id;
  confirm_id = 0;
  prep[0] = 0; prep[1] = 0; rec[0] = 0; rec[1] = 0;
  k = 0;
  do
  :: k < NI -> kmine[k] = 0; k++
  :: else -> break
  od;
  first_deploy = 0;
  exec_up = 1; phase = 1; restart_due = 0;
  printf("STEP deploy epoch=%d restore=%d ids_above=%d run_base=%d floor=%d below=%d fresh=%d\n",
         epoch, restore_id, ids_above, run_base, m, bw, fr)
}

inline lineage_reset() {   /* oracle: a new lineage expects the whole output once more */
  k = 0;
  do
  :: k < L -> out0[k] = 0; out1[k] = 0; k++
  :: else -> break
  od
}

active proctype protocol() {
end:
  do
  /* ============================================================ processes */
  :: atomic { !proc_up && !(ghost_done && b_rerun == 0) ->
       if
       :: ghost_done -> b_rerun--; lineage_reset(); ghost_done = 0
       :: else -> skip
       fi;
       proc_up = 1; used = 0; below = 0; first_deploy = 1; mem_last = 0;
       if
       :: cluster -> epoch++   /* a coordinator takes the leader lock: epoch + 1 */
       :: else -> skip         /* embedded: epoch 0, no leader election */
       fi;
       printf("STEP process_start epoch=%d\n", epoch);
       deploy() }
  :: atomic { proc_up && !exec_up && restart_due ->
       printf("STEP restart below=%d used=%d\n", below, used);
       deploy() }
  /* ============================================================ restore (per task) */
  :: atomic { exec_up && phase == 1 && !rec[0] ->
       rec[0] = 1;
       if
       :: restore_id == 0 ->
          k = 0;
          do
          :: k < NI -> pg_prep[k] = 0; pg_from[k] = 0; pg_to[k] = 0; k++
          :: else -> break
          od;
          pos[0] = 0; tfrom[0] = 0;
          printf("STEP open_fresh task=0\n")
       :: else ->
#ifdef truncate_on_restore
          k = 0;
          do
          :: k < L -> out0[k] = 0; k++
          :: else -> break
          od;
#endif
          k = 1;
          do
          :: k < NI ->
             if
             :: pg_prep[k] && k <= restore_id -> publish0(pg_from[k], pg_to[k]); pg_prep[k] = 0; pg_from[k] = 0; pg_to[k] = 0
             :: pg_prep[k] && k > restore_id -> pg_prep[k] = 0; pg_from[k] = 0; pg_to[k] = 0
             :: else -> skip
             fi;
             k++
          :: else -> break
          od;
          pos[0] = snap_pos[S(0, restore_id)] - 1; tfrom[0] = pos[0];
          printf("STEP recover task=0 ckpt=%d pos=%d\n", restore_id, pos[0])
       fi }
  :: atomic { exec_up && phase == 1 && !rec[1] ->
       rec[1] = 1;
       k = 0;   /* init_transactions: fences every older producer, aborts what it left */
       do
       :: k < NI -> k_prep[k] = 0; k_from[k] = 0; k_to[k] = 0; k++
       :: else -> break
       od;
       if
       :: restore_id == 0 ->
          kmarker = 0; pos[1] = 0; tfrom[1] = 0;
          printf("STEP open_fresh task=1\n")
       :: else ->
          pos[1] = snap_pos[S(1, restore_id)] - 1; tfrom[1] = pos[1];
#ifdef restore_from_completed
          printf("STEP recover task=1 ckpt=%d pos=%d marker=%d trusted\n", restore_id, pos[1], kmarker)
#else
          if
          :: kmarker >= restore_id ->
             printf("STEP recover task=1 ckpt=%d pos=%d marker=%d committed\n", restore_id, pos[1], kmarker)
#ifndef BIG_INTERVALS
          :: kmarker < restore_id && snap_prev[restore_id] <= kmarker ->
#else
          :: kmarker < restore_id && snap_prev[restore_id] <= kmarker && false ->
#endif
             printf("STEP recover task=1 ckpt=%d pos=%d marker=%d redo\n", restore_id, pos[1], kmarker);
             publish1(snap_from[S(1, restore_id)], snap_pos[S(1, restore_id)] - 1);
             kmarker = restore_id
#ifndef BIG_INTERVALS
          :: kmarker < restore_id && snap_prev[restore_id] > kmarker ->
#else
          :: kmarker < restore_id ->
#endif
#ifdef stop_at_first_refusal
             printf("STEP recover task=1 ckpt=%d pos=%d refused, taken as committed\n", restore_id, pos[1])
#else
             printf("STEP recover task=1 ckpt=%d marker=%d rewind\n", restore_id, kmarker);
             below = restore_id;
             exec_down()
#endif
          fi
#endif
       fi }
  :: atomic { exec_up && phase == 1 && rec[0] && rec[1] -> phase = 2; printf("STEP running\n") }

  /* ============================================================ running */
  /* a source reads the rest of its input and is done (the next trigger is the final one) */
  :: atomic { exec_up && phase == 2 && pos[0] < L && final_id == 0 ->
       pos[0] = L; printf("STEP source_done task=0 pos=%d\n", L) }
  :: atomic { exec_up && phase == 2 && pos[1] < L && final_id == 0 ->
       pos[1] = L; printf("STEP source_done task=1 pos=%d\n", L) }
  :: atomic { exec_up && phase == 2 && pending == 0 && next_id < MAXID &&
              !(final_id > 0 && last_completed >= final_id) ->
       next_id++; pending = next_id;
       if
       :: pos[0] == L && pos[1] == L -> final_id = pending
       :: else -> skip
       fi;
       printf("STEP trigger ckpt=%d final=%d\n", pending, final_id == pending) }
  /* barrier at source t: position snapshot + sink prepare, state held for the writer.
   * While reading, a source commits a completed checkpoint before it prepares the next
   * (exec.c run_source: maybe_commit, then take_checkpoint; the next periodic trigger comes
   * an interval after a completion). Once done reading it takes the final checkpoint first
   * and commits after (the done loop), and the final trigger follows a completion at once:
   * finding F1 (docs/protocol.md), modelled with -DF1; without it the final checkpoint, too,
   * is prepared only after the sink committed what was released before it.
   * Reads are folded into the barrier: what a source read after its last barrier is visible
   * to nothing but that barrier (a death forgets it), so a barrier advances the position by
   * any amount up to the end of input. */
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[0] != pending &&
              (committed[0] >= commit_upto || FINAL_FIRST) ->
       /* the records read since the last barrier: any number up to the end of input */
       do
       :: pos[0] < L -> pos[0]++
       :: true -> break
       od;
       prep[0] = pending; mpos[0] = pos[0]; mfrom[0] = tfrom[0];
       pg_prep[pending] = 1; pg_from[pending] = tfrom[0]; pg_to[pending] = pos[0];
       tfrom[0] = pos[0];
       printf("STEP prepare task=0 ckpt=%d pos=%d\n", pending, pos[0]) }
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[1] != pending &&
              (committed[1] >= commit_upto || FINAL_FIRST) ->
       /* the records read since the last barrier: any number up to the end of input */
       do
       :: pos[1] < L -> pos[1]++
       :: true -> break
       od;
       prep[1] = pending; mpos[1] = pos[1]; mfrom[1] = tfrom[1];
       mprev = 0; k = 1;
       do
       :: k < pending -> if :: kmine[k] && mprev == 0 -> mprev = k
                            :: else -> skip fi; k++
       :: else -> break
       od;
       m = 0; k = 1;
       do
       :: k < pending -> if :: kmine[k] -> m++ :: else -> skip fi; k++
       :: else -> break
       od;
       assert(m < 2);   /* kafka_sink_prepare: both slots busy is an internal error */
       k_prep[pending] = 1; k_from[pending] = tfrom[1]; k_to[pending] = pos[1];
       kmine[pending] = 1;
       tfrom[1] = pos[1];
       printf("STEP prepare task=1 ckpt=%d pos=%d prev=%d\n", pending, pos[1], mprev) }
  /* the writer makes the snapshot durable, then acknowledges */
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[0] == pending && !(acks & 1) ->
       snap_pos[S(0, pending)] = mpos[0] + 1;
       acks = acks | 1;
       printf("STEP snapshot_durable task=0 ckpt=%d\n", pending);
       if
       :: acks == 3 -> allacked = 1;
#ifdef broadcast_before_marker
          commit_upto = pending;
#endif
#ifdef restore_from_memory
          mem_last = pending;
#endif
          skip
       :: else -> skip
       fi }
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[1] == pending && !(acks & 2) ->
       snap_pos[S(1, pending)] = mpos[1] + 1; snap_from[S(1, pending)] = mfrom[1];
       snap_prev[pending] = mprev;
       acks = acks | 2;
       printf("STEP snapshot_durable task=1 ckpt=%d\n", pending);
       if
       :: acks == 3 -> allacked = 1;
#ifdef broadcast_before_marker
          commit_upto = pending;
#endif
#ifdef restore_from_memory
          mem_last = pending;
#endif
          skip
       :: else -> skip
       fi }
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[0] == pending && !(acks & 1) &&
              b_snap > 0 ->
       b_snap--; printf("STEP snapshot_failed task=0 ckpt=%d\n", pending);
#ifdef no_rewind_on_failed_checkpoint
       /* the failed checkpoint is abandoned and its prepared interval rolled back; the
        * job goes on from where its sources are */
       pg_prep[pending] = 0; k_prep[pending] = 0; kmine[pending] = 0;
       prep[0] = 0; prep[1] = 0; pending = 0; acks = 0; allacked = 0
#else
       exec_down()
#endif
     }
  :: atomic { exec_up && phase == 2 && pending > 0 && prep[1] == pending && !(acks & 2) &&
              b_snap > 0 ->
       b_snap--; printf("STEP snapshot_failed task=1 ckpt=%d\n", pending);
#ifdef no_rewind_on_failed_checkpoint
       /* the failed checkpoint is abandoned and its prepared interval rolled back; the
        * job goes on from where its sources are */
       pg_prep[pending] = 0; k_prep[pending] = 0; kmine[pending] = 0;
       prep[0] = 0; prep[1] = 0; pending = 0; acks = 0; allacked = 0
#else
       exec_down()
#endif
     }
  /* every task acknowledged: COMPLETED-N durable, and only then may sinks commit */
  :: atomic { exec_up && phase == 2 && pending > 0 && allacked ->
       completed[pending] = 1;
       last_completed = pending; mem_last = pending; commit_upto = pending;
       confirm_id = pending;
       printf("STEP completed ckpt=%d\n", pending);
       /* retention: the newest RETAIN, and always the newest confirmed */
       m = 0;
       if
       :: pending >= RETAIN -> m = pending - RETAIN + 1
       :: else -> skip
       fi;
       if
       :: last_confirmed > 0 && last_confirmed < m -> m = last_confirmed
       :: else -> skip
       fi;
       if
       :: m > 1 -> printf("STEP pruned below=%d\n", m)
       :: else -> skip
       fi;
       k = 1;
       do
       :: k < m -> snap_pos[S(0, k)] = 0; snap_pos[S(1, k)] = 0; k++
       :: else -> break
       od;
       pending = 0; allacked = 0; acks = 0;
       mpos[0] = 0; mpos[1] = 0; mfrom[0] = 0; mfrom[1] = 0; mprev = 0 }
  :: atomic { exec_up && phase == 2 && pending > 0 && allacked && b_mark > 0 ->
       b_mark--; printf("STEP marker_failed ckpt=%d\n", pending);
       exec_down() }
  /* sink commits (recoverable: every own prepared interval <= N) */
  :: atomic { exec_up && phase == 2 && commit_upto > committed[0] ->
       k = 1;
       do
       :: k <= commit_upto -> if :: pg_prep[k] -> publish0(pg_from[k], pg_to[k]); pg_prep[k] = 0; pg_from[k] = 0; pg_to[k] = 0
                                  :: else -> skip fi; k++
       :: else -> break
       od;
       committed[0] = commit_upto;
       printf("STEP commit task=0 ckpt=%d\n", commit_upto) }
  /* Kafka: commit_transaction of every slot holding a checkpoint <= N, oldest first */
  :: atomic { exec_up && phase == 2 && commit_upto > committed[1] ->
       k = 1; m = 0;
       do
       :: k <= commit_upto && m == 0 ->
          if
          :: kmine[k] && k_prep[k] ->
             publish1(k_from[k], k_to[k]); k_prep[k] = 0; kmine[k] = 0; kmarker = k;
             k_from[k] = 0; k_to[k] = 0
          :: kmine[k] && !k_prep[k] -> m = k  /* the broker lost it: the commit fails */
          :: else -> skip
          fi;
          k++
       :: else -> break
       od;
       if
       :: m == 0 -> committed[1] = commit_upto;
          printf("STEP commit task=1 ckpt=%d\n", commit_upto)
       :: else -> printf("STEP commit_failed task=1 ckpt=%d (transaction lost)\n", m);
          exec_down()
       fi }
  :: atomic { exec_up && phase == 2 && commit_upto > committed[1] && b_outage > 0 ->
       b_outage--; printf("STEP commit_failed task=1 ckpt=%d (broker outage)\n", commit_upto);
       exec_down() }
  :: atomic { exec_up && b_lose > 0 ->
       b_lose--;
       k = 1;
       do
       :: k < NI && k_prep[k] -> k_prep[k] = 0; k_from[k] = 0; k_to[k] = 0; printf("STEP broker_lost ckpt=%d\n", k); break
       :: k < NI -> k++
       :: k >= NI -> break
       od }
  /* every sink committed N: CONFIRMED-N */
  :: atomic { exec_up && phase == 2 && confirm_id > 0 && !confirmed[confirm_id] &&
              committed[0] >= confirm_id && committed[1] >= confirm_id ->
       confirmed[confirm_id] = 1; last_confirmed = confirm_id;
       /* confirmed => committed: each sink's output holds every position of its cut */
       k = 0;
       do
       :: k < snap_pos[S(0, confirm_id)] - 1 -> assert(out0[k] == 1); k++
       :: else -> break
       od;
       k = 0;
       do
       :: k < snap_pos[S(1, confirm_id)] - 1 -> assert(out1[k] == 1); k++
       :: else -> break
       od;
       printf("STEP confirmed ckpt=%d\n", confirm_id) }
  /* the final checkpoint is committed: the job ends, clean-finish durable */
  :: atomic { exec_up && phase == 2 && final_id > 0 && last_completed >= final_id &&
              committed[0] >= final_id && committed[1] >= final_id ->
       clean_finish = 1;
       printf("STEP finish ckpt=%d\n", final_id);
       /* no input position lost, none twice: this lineage's output is the input, once */
       k = 0;
       do
       :: k < L -> assert(out0[k] == 1 && out1[k] == 1); k++
       :: else -> break
       od;
       ghost_done = 1; finished_once = 1;
       exec_down();
       proc_up = 0; restart_due = 0; used = 0; mem_last = 0; z_pending = 0;
       late_id = 0; late_t = 0; late_pos = 0; late_from = 0 }

  /* ============================================================ superseded / lost */
  /* the superseded coordinator's trigger reaches a task of the new deployment */
  :: atomic { cluster && z_pending > 0 && exec_up && phase == 2 && b_stale > 0 ->
       b_stale--;
#ifdef no_fencing
       printf("STEP stale_trigger ckpt=%d accepted\n", z_pending);
       pg_prep[z_pending] = 1; pg_from[z_pending] = tfrom[0]; pg_to[z_pending] = pos[0];
       snap_pos[S(0, z_pending)] = pos[0] + 1;
       tfrom[0] = pos[0];
#else
       printf("STEP stale_trigger ckpt=%d dropped (epoch %d < %d)\n", z_pending, epoch - 1,
              epoch);
#endif
       z_pending = 0 }
  /* a worker declared lost still writes the snapshot it held */
  :: atomic { cluster && late_id > 0 && b_stale > 0 ->
       b_stale--;
       snap_pos[S(late_t, late_id)] = late_pos + 1;
       snap_from[S(late_t, late_id)] = late_from * late_t;
       printf("STEP late_snapshot task=%d ckpt=%d\n", late_t, late_id);
       late_id = 0; late_t = 0; late_pos = 0; late_from = 0 }
  /* ============================================================ deaths (last: a depth-first
   * search then tries them late, which keeps counterexamples short) */
  :: atomic { proc_up && b_crash > 0 ->
       b_crash--;
       printf("STEP crash epoch=%d pending=%d\n", epoch, pending);
       if
       :: cluster && pending > 0 && b_stale > 0 -> z_pending = pending  /* it keeps running */
       :: else -> skip
       fi;
       exec_down();
       proc_up = 0; restart_due = 0; used = 0; mem_last = 0; below = 0; epoch = epoch * cluster;
       late_id = 0; late_t = 0; late_pos = 0; late_from = 0 }
  :: atomic { exec_up && b_fail > 0 ->
       b_fail--;
       if
       :: cluster && pending > 0 && prep[0] == pending && !(acks & 1) && b_stale > 0 ->
          late_id = pending; late_t = 0; late_pos = mpos[0]; late_from = mfrom[0]
       :: cluster && pending > 0 && prep[1] == pending && !(acks & 2) && b_stale > 0 ->
          late_id = pending; late_t = 1; late_pos = mpos[1]; late_from = mfrom[1]
       :: else -> skip
       fi;
       printf("STEP exec_fail pending=%d\n", pending);
       exec_down() }

  :: else ->
     /* progress: a run ends finished, or only because a bound ran out */
     assert(!proc_up || next_id >= MAXID);
     break
  od
}
