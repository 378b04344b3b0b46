#!/usr/bin/env bash
# DESIGN: runs the Spin model of the checkpoint protocol (formal/checkpoint.pml) against its
# verdict table (formal/mutants.tsv): every `pass` row must hold, every `refuted` row must
# yield a counterexample, every `guarded` row must yield none. A changed verdict in either
# direction fails the check. A counterexample is printed as a numbered list of the model's
# steps (the STEP lines its actions print, which are the engine's trace event names).
#
#   scripts/model-check.sh [--large] [--only NAME] [--quiet] [--keep]
#     --large   bigger bounds: two records per partition everywhere, MAXID=4, bitstate
#               search (2^31 bits) instead of the exhaustive one
#     --only    run the rows whose name starts with NAME
#     --quiet   do not print the counterexamples of rows that are refuted as expected
#     --keep    keep the work directory (pan sources, trails, logs)
#
# Traces (formal/check-trace, docs/protocol.md): every `pass` row's model is also simulated
# (CK_MODEL_SIMS random runs, default 100) and each run's steps must be accepted by
# check-trace --model; every refuted row's counterexample must get the trace verdict of the
# table's `trace` column (rejected: the trace rules see the defect; accepted: only the
# model's data invariants do). Engine traces: every run directory under formal/traces/accept
# must be accepted and under formal/traces/reject rejected, and so must every directory in
# CK_TRACE_DIRS (colon-separated, accepted), e.g. the ones CI's tests recorded.
# Last line: "model: N mutants refuted, M guarded, traces accepted K (…)". Exit 0 when every
# verdict is as recorded, 1 otherwise, 2 on a usage or tool error.
# Memory: each search is capped (MEMLIM, MB) since the machine is shared; CK_MODEL_MEMLIM
# overrides the cap (default 1024).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
model="$here/formal/checkpoint.pml"
table="$here/formal/mutants.tsv"
large=0 only="" quiet=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --large) large=1 ;;
    --only) only="$2"; shift ;;
    --quiet) quiet=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "model-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for tool in spin gcc; do
  command -v "$tool" >/dev/null || { echo "model-check: '$tool' is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
memlim=${CK_MODEL_MEMLIM:-1024}
work=$(mktemp -d "${TMPDIR:-/tmp}/clink-model.XXXXXX")
[ $keep = 1 ] || trap 'rm -rf "$work"' EXIT

# The failed assertion, in the words of the invariant it checks.
invariant() {
  case "$1" in
    *"out0[i]<=1"*|*"out1[i]<=1"*) echo "an input position is published twice" ;;
    *"out0[k]==1)&&(out1[k]==1"*) echo "at the job's end, its output is not its input exactly once (a position lost)" ;;
    *"out0[k]==1"*|*"out1[k]==1"*) echo "a checkpoint is confirmed but its output is not committed" ;;
    *"next_id>=MAXID"*) echo "progress: the run stopped without finishing, with checkpoint ids left" ;;
    *"m<2"*) echo "the kafka sink was asked to prepare with both transaction slots busy" ;;
    *) echo "$1" ;;
  esac
}

refuted=0 guarded=0 passed=0 bad=0
total_start=$(date +%s)
checktrace="$here/formal/check-trace"
sims=${CK_MODEL_SIMS:-100}
sim_ok=0 trace_ok=0 engine_ok=0 engine_rej=0
while IFS=$'\t' read -r name defs expect tverdict why; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -n "$only" ] && [ "${name#"$only"}" = "$name" ] && continue
  if [ $large = 1 ]; then
    defs="$(echo "$defs" | sed 's/-DL=1/-DL=2/') -DMAXID=4"
    search="-DBITSTATE"; run="-w31"
  else
    search="-DHC4"; run=""
  fi
  # a row expected to be refuted stops at its first counterexample: a quick build is cheaper
  # there; a row searched to the end is worth the optimiser's 10 s
  if [ "$expect" = refuted ]; then opt=-O0; else opt=-O2; fi
  dir="$work/${name//\//_}"
  mkdir -p "$dir"
  cp "$model" "$dir/checkpoint.pml"
  # shellcheck disable=SC2086
  if ! (cd "$dir" && spin -a $defs checkpoint.pml >spin.log 2>&1 &&
        gcc $opt -w -DSAFETY -DMEMLIM="$memlim" $search -o pan pan.c >gcc.log 2>&1); then
    echo "model-check: could not build '$name':" >&2
    cat "$dir/spin.log" "$dir/gcc.log" >&2
    exit 2
  fi
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  (cd "$dir" && ./pan -m400000 $run >pan.log 2>&1)
  t1=$(date +%s.%N)
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.log" | head -1)
  states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' "$dir/pan.log" | head -1)
  mem=$(sed -n 's/^ *\([0-9.]*\).*total actual memory usage.*/\1/p' "$dir/pan.log" | head -1)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  incomplete=""
  grep -q "out of memory\|max search depth too small" "$dir/pan.log" && incomplete=" (search incomplete: out of memory or depth)"
  if [ -z "$errors" ]; then
    echo "model-check: '$name': pan gave no result:" >&2
    tail -20 "$dir/pan.log" >&2
    exit 2
  fi
  if [ "$errors" -gt 0 ]; then got=refuted; else got=none; fi
  line=$(printf '%-34s %-8s states=%-10s mem=%sMB time=%ss%s' "$name" \
         "$( [ "$got" = refuted ] && echo refuted || { [ "$expect" = guarded ] && echo guarded || echo holds; } )" \
         "${states:-?}" "${mem:-?}" "$secs" "$incomplete")
  ok=0
  case "$expect:$got" in
    pass:none) ok=1; passed=$((passed + 1)) ;;
    refuted:refuted) ok=1; refuted=$((refuted + 1)) ;;
    guarded:none) ok=1; guarded=$((guarded + 1)) ;;
  esac
  if [ -n "$incomplete" ] && [ "$got" = none ]; then ok=0; fi
  echo "$line"
  lval=$(echo "$defs" | sed -n 's/.*-DL=\([0-9]*\).*/\1/p')
  if [ "$got" = refuted ]; then
    # shellcheck disable=SC2086
    (cd "$dir" && spin -t $defs checkpoint.pml >trail.txt 2>&1)
    tout=$("$checktrace" --model --model-L="${lval:-2}" "$dir/trail.txt")
    case "$tout" in *rejected*) tgot=rejected ;; *) tgot=accepted ;; esac
    echo "  trace check of the counterexample: $tgot${tout:+ ($(echo "$tout" | sed 's/^check-trace: //'))}"
    if [ "$tverdict" != "?" ] && [ "$tverdict" != "$tgot" ]; then
      ok=0; echo "  FAILED: formal/mutants.tsv records the trace check as $tverdict"
    elif [ "$tverdict" = "$tgot" ]; then trace_ok=$((trace_ok + 1)); fi
  fi
  if [ "$expect" = pass ]; then
    for seed in $(seq 1 "$sims"); do
      # shellcheck disable=SC2086
      (cd "$dir" && spin $defs -n"$seed" checkpoint.pml >"sim-$seed.txt" 2>&1)
    done
    if ! tout=$("$checktrace" --model-each --model-L="${lval:-2}" "$dir"/sim-*.txt); then
      ok=0; echo "$tout" | head -6 | sed 's/^/  /'
      echo "  FAILED: simulated runs of the model are rejected by formal/check-trace"
    else
      sim_ok=$((sim_ok + sims)); echo "  $sims simulated runs: every one accepted by formal/check-trace"
    fi
  fi
  if [ "$got" = refuted ] && { [ $ok = 0 ] || [ $quiet = 0 ]; }; then
    what=$(sed -n 's/^spin: text of failed assertion: //p' "$dir/trail.txt" | head -1)
    echo "  counterexample ($(invariant "$what")):"
    grep -E '^ *STEP ' "$dir/trail.txt" | sed 's/^ *STEP //' | awk '{ printf "  %3d. %s\n", NR, $0 }'
    echo "  $(grep -E '^spin: .*assertion violated' "$dir/trail.txt" | head -1)"
  fi
  if [ $ok = 0 ]; then
    bad=$((bad + 1))
    case "$expect" in
      pass) echo "  FAILED: the model must hold here ($why)" ;;
      refuted) echo "  FAILED: mutant '$name' was not refuted: it is recorded as refuted ($why)." \
                    "If a later rule now catches it, record it as guarded in formal/mutants.tsv and docs/protocol.md" ;;
      guarded) echo "  FAILED: mutant '$name' is recorded as guarded ($why) but now has a counterexample:" \
                    "the rule that guarded it changed" ;;
    esac
  fi
done <"$table"
# engine traces: each directory is one run (its processes' files checked together)
check_runs() { # $1: accept|reject, then directories
  local want=$1 d out; shift
  for d in "$@"; do
    [ -d "$d" ] || continue
    ls "$d"/*.ndjson >/dev/null 2>&1 || continue
    out=$("$checktrace" "$d"); rc=$?
    if [ "$want" = accept ] && [ $rc = 0 ]; then engine_ok=$((engine_ok + 1))
    elif [ "$want" = reject ] && [ $rc = 1 ]; then engine_rej=$((engine_rej + 1))
    else bad=$((bad + 1)); echo "trace $d: expected to be ${want}ed: $out"; fi
  done
}
if [ -z "$only" ]; then
  check_runs accept "$here"/formal/traces/accept/*/
  check_runs reject "$here"/formal/traces/reject/*/
  IFS=: read -r -a extra <<<"${CK_TRACE_DIRS:-}"
  check_runs accept "${extra[@]}"
  echo "engine traces: $engine_ok runs accepted, $engine_rej rejected as recorded"
fi
total=$(( $(date +%s) - total_start ))
[ $keep = 1 ] && echo "work directory: $work"
echo "model: $refuted mutants refuted, $guarded guarded, traces accepted $((sim_ok + engine_ok)) ($sim_ok model simulations, $engine_ok engine runs; $trace_ok counterexamples and $engine_rej engine runs rejected as recorded; $passed configurations hold, ${total}s)"
[ $bad = 0 ] || { echo "model: $bad verdicts differ from formal/mutants.tsv" >&2; exit 1; }
exit 0
