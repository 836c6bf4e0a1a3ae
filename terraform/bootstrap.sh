#!/bin/bash
# Runs the benchmark on a fresh host, uploads everything to S3, then powers the host off; or, as one of
# the Spark workers of a multi-node run (BENCH_ROLE=worker), serves the benchmark host's Spark master
# until that master is gone, then powers off too.
#
# On EC2 the user data (terraform/modules/user_data) writes /opt/bench/bootstrap.env and runs this
# script as root; with instance_initiated_shutdown_behavior = "terminate", the final power-off
# terminates the instance.  The same script runs on any Linux host: every host-specific step is a
# setting (tests/cloud/test_bootstrap.py runs it here against a local S3 server, with the power-off replaced
# by a marker command).
#
# Order of events, whatever fails:
#   1. arm the hard deadline (shutdown -P +MAX_LIFETIME) before anything else;
#   2. system packages, data volume, harness, `make setup`;
#   3. `bench run` for each scenario under a time limit that leaves BENCH_UPLOAD_RESERVE_S for step 5,
#      with partial results uploaded after each scenario;
#   4. `bench report` when the harness has it;
#   5. EXIT trap: upload results, report and logs, then status.json LAST, then power off.
# With BENCH_SPARK_WORKERS=N > 0, between 2 and 3: start a Spark standalone master on this host and wait
# for N ALIVE workers (else the run fails, uploads and powers off); `bench run` gets --spark-master; the
# EXIT trap stops the master first.
#
# BENCH_ROLE=worker (a Spark worker of such a run): steps 1 and 2, then wait for the master, run a Spark
# worker for it, and when the master has stopped answering for BENCH_SPARK_MASTER_GRACE_S (the run is
# over), or never answered within BENCH_SPARK_MASTER_WAIT_S, or at the deadline: stop the worker, upload
# this host's logs to <results>/workers/<instance-id>/ (never status.json), power off.
#
# Settings (environment; * = required):
#   BENCH_RUN_ID*            name of the run; results go to $BENCH_RESULTS_URI
#   BENCH_RESULTS_URI*       s3://bucket/runs/<run-id>/
#   BENCH_SCENARIOS*         scenarios, comma- or space-separated (bench role)
#   BENCH_ROLE               bench | worker (default bench)
#   BENCH_SCALE              1.0 = the published size (default 1.0)
#   BENCH_ENGINES            default spark,risingwave
#   BENCH_REPS               default 1
#   BENCH_ENGINE_TIMEOUT     seconds per engine run (default 3600)
#   BENCH_MEMORY_BUDGET      e.g. 64G (default: the harness's)
#   BENCH_INSTANCE_TYPE      passed to bench run/report as --instance-type when they accept it
#   BENCH_EXTRA_RUN_ARGS     more `bench run` arguments (word-split)
#   BENCH_WAREHOUSE          warehouse root: a directory (default $BENCH_DATA_DIR/warehouse) or s3://...
#   BENCH_SOURCE_TABLE       NS.TABLE: your own table instead of generated ones (`bench run --source-table`,
#                            no --scale); its catalog file is downloaded from BENCH_SOURCE_CATALOG_URI (s3://...)
#   BENCH_SOURCE_CATALOG_URI, BENCH_SOURCE_SNAPSHOT   with BENCH_SOURCE_TABLE (the snapshot: default current)
#   BENCH_CLEAN_WAREHOUSE    1 = delete a local scenario's warehouse after it ran (default 1)
#   BENCH_STATE_DIR          local state (catalog, dataset manifests) of s3:// warehouses (default $BENCH_DATA_DIR/state)
#   BENCH_DATA_DIR           work directory on the data volume (default /data)
#   BENCH_DATA_DEVICE        auto (the one unformatted non-root disk), /dev/..., or none (default auto)
#   BENCH_LOG_DIR            default /var/log/bench
#   BENCH_HARNESS_SOURCE     git | s3 | dir (default git)
#   BENCH_HARNESS_GIT_URL, BENCH_HARNESS_REF   for git
#   BENCH_HARNESS_ARCHIVE_URI                  s3://.../harness.tar.gz, for s3
#   BENCH_HARNESS_DIR        where the harness is (installed) (default /opt/bench/harness)
#   BENCH_INSTALL_SYSTEM_PACKAGES  1 = apt-get install Java, git, make, python3-venv... (default 1)
#   BENCH_SKIP_SETUP         1 = do not run `make setup` (default 0)
#   BENCH_ENABLE_SSM         1 = install the SSM agent (Debian AMIs lack it) (default 0)
#   BENCH_CMD                the bench CLI (default $BENCH_HARNESS_DIR/.venv/bin/bench)
#   BENCH_PYTHON, BENCH_UPLOADER   python with boto3 and bench/cloud.py (default python3, next to this)
#   BENCH_MAX_LIFETIME_MIN   hard deadline, minutes after boot (default 480)
#   BENCH_UPLOAD_RESERVE_S   seconds kept for the final upload before the deadline (default 600)
#   BENCH_DEADLINE_CMD       default: shutdown -P +$BENCH_MAX_LIFETIME_MIN
#   BENCH_POWEROFF_CMD       default: systemctl poweroff
#   BENCH_REPORT             1 = render the report when `bench report` exists (default 1)
# The Spark standalone cluster (spark_workers > 0 in Terraform):
#   BENCH_SPARK_WORKERS      bench role: workers to wait for; 0 = no cluster (default 0)
#   BENCH_SPARK_MASTER_HOST  worker role*: the master's address (the benchmark host's private IP)
#   BENCH_PRIVATE_IP         this host's address (default: IMDSv2 local-ipv4)
#   BENCH_INSTANCE_ID        names a worker's logs (default: IMDSv2 instance-id, else the hostname)
#   BENCH_SPARK_MASTER_PORT, BENCH_SPARK_MASTER_WEBUI_PORT, BENCH_SPARK_WORKER_PORT,
#   BENCH_SPARK_WORKER_WEBUI_PORT   default 7077, 8080, 7080, 8081 (the security group admits these)
#   BENCH_SPARK_WORKERS_TIMEOUT_S   bench role: wait for the workers at most this long (default 900)
#   BENCH_SPARK_MASTER_WAIT_S       worker role: wait for the master at most this long (default 1800)
#   BENCH_SPARK_MASTER_GRACE_S      worker role: the master unanswering this long = run over (default 300)
#   BENCH_SPARK_POLL_S       seconds between looks at the master's /json/ (default 10)
#   BENCH_SPARK_WORKER_CORES, BENCH_SPARK_WORKER_MEMORY   what a worker offers (default: nproc, and 90%
#                            of the RAM in MiB, e.g. 57600m)
#   BENCH_SPARK_DAEMON_MEMORY  heap of the master and worker daemons (default 1g)
#   BENCH_SPARK_HOME         the Spark distribution (default: the pyspark package of BENCH_VENV_PYTHON)
#   BENCH_VENV_PYTHON        the harness's python (default: the python next to $BENCH_CMD)
set -uo pipefail   # no -e: every step checks its own status and the EXIT trap must always run

: "${BENCH_RUN_ID:?BENCH_RUN_ID is required}"
: "${BENCH_RESULTS_URI:?BENCH_RESULTS_URI is required (s3://bucket/runs/<run-id>/)}"
export BENCH_ROLE=${BENCH_ROLE:-bench}
[[ $BENCH_ROLE == worker ]] || : "${BENCH_SCENARIOS:?BENCH_SCENARIOS is required}"
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BENCH_SCALE=${BENCH_SCALE:-1.0}
export BENCH_ENGINES=${BENCH_ENGINES:-spark,risingwave}
export BENCH_REPS=${BENCH_REPS:-1}
export BENCH_ENGINE_TIMEOUT=${BENCH_ENGINE_TIMEOUT:-3600}
export BENCH_MEMORY_BUDGET=${BENCH_MEMORY_BUDGET:-}
export BENCH_INSTANCE_TYPE=${BENCH_INSTANCE_TYPE:-}
export BENCH_EXTRA_RUN_ARGS=${BENCH_EXTRA_RUN_ARGS:-}
export BENCH_DATA_DIR=${BENCH_DATA_DIR:-/data}
export BENCH_DATA_DEVICE=${BENCH_DATA_DEVICE:-auto}
export BENCH_WAREHOUSE=${BENCH_WAREHOUSE:-$BENCH_DATA_DIR/warehouse}
export BENCH_CLEAN_WAREHOUSE=${BENCH_CLEAN_WAREHOUSE:-1}
export BENCH_STATE_DIR=${BENCH_STATE_DIR:-$BENCH_DATA_DIR/state}
export BENCH_LOG_DIR=${BENCH_LOG_DIR:-/var/log/bench}
export BENCH_SOURCE_TABLE=${BENCH_SOURCE_TABLE:-}
export BENCH_SOURCE_CATALOG_URI=${BENCH_SOURCE_CATALOG_URI:-}
export BENCH_SOURCE_SNAPSHOT=${BENCH_SOURCE_SNAPSHOT:-}
export BENCH_HARNESS_SOURCE=${BENCH_HARNESS_SOURCE:-git}
export BENCH_HARNESS_GIT_URL=${BENCH_HARNESS_GIT_URL:-}
export BENCH_HARNESS_REF=${BENCH_HARNESS_REF:-main}
export BENCH_HARNESS_ARCHIVE_URI=${BENCH_HARNESS_ARCHIVE_URI:-}
export BENCH_HARNESS_DIR=${BENCH_HARNESS_DIR:-/opt/bench/harness}
export BENCH_INSTALL_SYSTEM_PACKAGES=${BENCH_INSTALL_SYSTEM_PACKAGES:-1}
export BENCH_SKIP_SETUP=${BENCH_SKIP_SETUP:-0}
export BENCH_ENABLE_SSM=${BENCH_ENABLE_SSM:-0}
export BENCH_CMD=${BENCH_CMD:-$BENCH_HARNESS_DIR/.venv/bin/bench}
export BENCH_PYTHON=${BENCH_PYTHON:-python3}
export BENCH_UPLOADER=${BENCH_UPLOADER:-$SCRIPT_DIR/cloud.py}
export BENCH_MAX_LIFETIME_MIN=${BENCH_MAX_LIFETIME_MIN:-480}
export BENCH_UPLOAD_RESERVE_S=${BENCH_UPLOAD_RESERVE_S:-600}
export BENCH_DEADLINE_CMD=${BENCH_DEADLINE_CMD:-shutdown -P +$BENCH_MAX_LIFETIME_MIN}
export BENCH_POWEROFF_CMD=${BENCH_POWEROFF_CMD:-systemctl poweroff}
export BENCH_REPORT=${BENCH_REPORT:-1}
export BENCH_SPARK_WORKERS=${BENCH_SPARK_WORKERS:-0}
export BENCH_SPARK_MASTER_HOST=${BENCH_SPARK_MASTER_HOST:-}
export BENCH_PRIVATE_IP=${BENCH_PRIVATE_IP:-}
export BENCH_INSTANCE_ID=${BENCH_INSTANCE_ID:-}
export BENCH_SPARK_MASTER_PORT=${BENCH_SPARK_MASTER_PORT:-7077}
export BENCH_SPARK_MASTER_WEBUI_PORT=${BENCH_SPARK_MASTER_WEBUI_PORT:-8080}
export BENCH_SPARK_WORKER_PORT=${BENCH_SPARK_WORKER_PORT:-7080}
export BENCH_SPARK_WORKER_WEBUI_PORT=${BENCH_SPARK_WORKER_WEBUI_PORT:-8081}
export BENCH_SPARK_WORKERS_TIMEOUT_S=${BENCH_SPARK_WORKERS_TIMEOUT_S:-900}
export BENCH_SPARK_MASTER_WAIT_S=${BENCH_SPARK_MASTER_WAIT_S:-1800}
export BENCH_SPARK_MASTER_GRACE_S=${BENCH_SPARK_MASTER_GRACE_S:-300}
export BENCH_SPARK_POLL_S=${BENCH_SPARK_POLL_S:-10}
export BENCH_SPARK_WORKER_CORES=${BENCH_SPARK_WORKER_CORES:-}
export BENCH_SPARK_WORKER_MEMORY=${BENCH_SPARK_WORKER_MEMORY:-}
export BENCH_SPARK_DAEMON_MEMORY=${BENCH_SPARK_DAEMON_MEMORY:-1g}
export BENCH_SPARK_HOME=${BENCH_SPARK_HOME:-}
export BENCH_VENV_PYTHON=${BENCH_VENV_PYTHON:-$(dirname "$BENCH_CMD")/python}

START_EPOCH=$(date +%s)
DEADLINE_EPOCH=$((START_EPOCH + BENCH_MAX_LIFETIME_MIN * 60 - BENCH_UPLOAD_RESERVE_S))
RESULTS_ROOT=$BENCH_DATA_DIR/results      # bench writes $RESULTS_ROOT/$BENCH_RUN_ID/*.json
REPORT_FILE=$BENCH_DATA_DIR/report.html  # beside the results, here and in the run's prefix (--out: any harness)
OUTCOMES=$BENCH_LOG_DIR/outcomes.tsv
STATUS=running     # -> ok | failed | timeout | interrupted
PHASE=start
MESSAGE=
REPORT_STATE=not-run
HARNESS_REVISION=unknown
MASTER_PID=        # the Spark master (bench role with workers)
WORKER_PID=        # the Spark worker (worker role)

mkdir -p "$BENCH_LOG_DIR" || exit 1
[[ $BENCH_ROLE == worker ]] || : > "$OUTCOMES"
exec >> "$BENCH_LOG_DIR/bootstrap.log" 2>&1

log() { printf '%s bootstrap[%s]: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$BENCH_ROLE:$PHASE" "$*"; }
fail() { STATUS=failed; MESSAGE="$PHASE: $*"; log "FAILED: $*"; exit 1; }

uploader() {  # the system python with boto3, else the harness's own virtualenv once it exists
  local py=$BENCH_PYTHON
  if ! "$py" -I -c 'import boto3' 2>/dev/null && [[ -x $BENCH_HARNESS_DIR/.venv/bin/python ]]; then
    py=$BENCH_HARNESS_DIR/.venv/bin/python
  fi
  "$py" -I "$BENCH_UPLOADER" "$@"
}

publish() {  # publish [status args...]: results, report and logs, then status.json when asked
  local parts=()
  [[ -d $RESULTS_ROOT/$BENCH_RUN_ID ]] && parts+=(--dir "results=$RESULTS_ROOT/$BENCH_RUN_ID")
  [[ -f $REPORT_FILE ]] && parts+=(--file "report.html=$REPORT_FILE")
  parts+=(--dir "logs=$BENCH_LOG_DIR")
  uploader publish "$BENCH_RESULTS_URI" "${parts[@]}" "$@"
}

# --- the Spark standalone cluster: helpers -----------------------------------------------------------
imds() {  # imds NAME: an instance metadata value over IMDSv2 (session token first)
  "$BENCH_PYTHON" -I - "$1" <<'PY'
import sys, urllib.request
base, opener = "http://169.254.169.254/latest", urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    token = opener.open(urllib.request.Request(
        f"{base}/api/token", method="PUT", headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"}), timeout=5).read()
    print(opener.open(urllib.request.Request(
        f"{base}/meta-data/{sys.argv[1]}", headers={"X-aws-ec2-metadata-token": token.decode()}), timeout=5).read().decode())
except Exception as e:
    sys.exit(f"IMDS {sys.argv[1]}: {e}")
PY
}

alive_workers() {  # alive_workers URL: the number of ALIVE workers at a master's /json/; fails when the master does not answer or is not ALIVE
  "$BENCH_PYTHON" -I - "$1" <<'PY'
import json, sys, urllib.request
try:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(sys.argv[1], timeout=5) as r:
        master = json.load(r)
except Exception:
    sys.exit(1)
if master.get("status") != "ALIVE":
    sys.exit(1)
print(sum(1 for w in master.get("workers", []) if w.get("state") == "ALIVE"))
PY
}

running() {  # running PID: the process exists and is not a zombie
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) && [[ -n $st && ${st:0:1} != Z ]]
}

SPARK_PID=
spark_start() {  # spark_start NAME CLASS ARGS...: a Spark daemon in a process group of its own; sets SPARK_PID
  local name=$1 home=$BENCH_SPARK_HOME conf=$BENCH_DATA_DIR/spark/conf
  shift
  if [[ -z $home ]]; then
    home=$("$BENCH_VENV_PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
      || { log "no pyspark in $BENCH_VENV_PYTHON"; return 1; }
  fi
  [[ -x $home/bin/spark-class ]] || { log "no bin/spark-class in $home"; return 1; }
  mkdir -p "$conf" || return 1  # an empty SPARK_CONF_DIR: no spark-env.sh or defaults of the host
  log "starting the Spark $name: spark-class $* (log: logs/spark-$name.log)"
  # setsid: the daemon leads its own process group (executors included), stopped as one by spark_stop;
  # a port already taken fails the start instead of moving Spark to a port the security group closes;
  # the master's unauthenticated submission REST API (on by default since Spark 4.1, port 6066) is off.
  SPARK_HOME=$home SPARK_CONF_DIR=$conf SPARK_DAEMON_MEMORY=$BENCH_SPARK_DAEMON_MEMORY \
    SPARK_DAEMON_JAVA_OPTS="-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false" \
    SPARK_LOCAL_IP=$BENCH_PRIVATE_IP \
    setsid "$home/bin/spark-class" "$@" >> "$BENCH_LOG_DIR/spark-$name.log" 2>&1 < /dev/null &
  SPARK_PID=$!
}

# shellcheck disable=SC2329  # invoked by the EXIT trap
spark_stop() {  # spark_stop PID: SIGTERM to the daemon's process group, SIGKILL to what is left after 15 s
  local pid=$1 _
  [[ -n $pid ]] || return 0
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do running "$pid" || break; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# Bench role: a master on this host, then BENCH_SPARK_WORKERS ALIVE workers registered with it, or fail.
start_spark_master() {
  local status_url=http://$BENCH_PRIVATE_IP:$BENCH_SPARK_MASTER_WEBUI_PORT/json/ t0 n=0
  SPARK_MASTER_URL=spark://$BENCH_PRIVATE_IP:$BENCH_SPARK_MASTER_PORT
  spark_start master org.apache.spark.deploy.master.Master --host "$BENCH_PRIVATE_IP" \
    --port "$BENCH_SPARK_MASTER_PORT" --webui-port "$BENCH_SPARK_MASTER_WEBUI_PORT" || fail "cannot start the Spark master"
  MASTER_PID=$SPARK_PID
  t0=$(date +%s)
  log "waiting up to ${BENCH_SPARK_WORKERS_TIMEOUT_S} s for $BENCH_SPARK_WORKERS ALIVE workers at $status_url"
  while :; do
    running "$MASTER_PID" || fail "the Spark master exited (see logs/spark-master.log)"
    n=$(alive_workers "$status_url") || n=0
    ((n >= BENCH_SPARK_WORKERS)) && break
    if (($(date +%s) - t0 >= BENCH_SPARK_WORKERS_TIMEOUT_S || $(date +%s) >= DEADLINE_EPOCH)); then
      fail "only $n of $BENCH_SPARK_WORKERS Spark workers ALIVE at $SPARK_MASTER_URL after $(($(date +%s) - t0)) s"
    fi
    sleep "$BENCH_SPARK_POLL_S"
  done
  log "Spark master $SPARK_MASTER_URL: $n workers ALIVE after $(($(date +%s) - t0)) s"
}

# Worker role: wait for the master, serve it with a worker until it is gone (the run is over), return.
run_spark_worker() {
  local master=spark://$BENCH_SPARK_MASTER_HOST:$BENCH_SPARK_MASTER_PORT
  local status_url=http://$BENCH_SPARK_MASTER_HOST:$BENCH_SPARK_MASTER_WEBUI_PORT/json/
  local cores=${BENCH_SPARK_WORKER_CORES:-$(nproc)} memory=$BENCH_SPARK_WORKER_MEMORY t0 now last_ok restarts=0
  [[ -n $BENCH_SPARK_MASTER_HOST ]] || fail "BENCH_SPARK_MASTER_HOST is empty"
  [[ -n $memory ]] || memory=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 9 / 10 / 1024))m
  t0=$(date +%s)
  log "waiting up to ${BENCH_SPARK_MASTER_WAIT_S} s for the Spark master ($status_url)"
  until alive_workers "$status_url" > /dev/null; do
    now=$(date +%s)
    ((now - t0 < BENCH_SPARK_MASTER_WAIT_S)) || fail "the Spark master ($status_url) did not answer within ${BENCH_SPARK_MASTER_WAIT_S} s"
    ((now < DEADLINE_EPOCH)) || { STATUS=timeout; MESSAGE="deadline reached waiting for the master"; exit 1; }
    sleep "$BENCH_SPARK_POLL_S"
  done
  mkdir -p "$BENCH_DATA_DIR/spark/work" || fail "mkdir $BENCH_DATA_DIR/spark/work"
  last_ok=$(date +%s)
  while :; do
    if [[ -z $WORKER_PID ]]; then
      spark_start worker org.apache.spark.deploy.worker.Worker "$master" --host "$BENCH_PRIVATE_IP" \
        --port "$BENCH_SPARK_WORKER_PORT" --webui-port "$BENCH_SPARK_WORKER_WEBUI_PORT" --cores "$cores" \
        --memory "$memory" --work-dir "$BENCH_DATA_DIR/spark/work" || fail "cannot start the Spark worker"
      WORKER_PID=$SPARK_PID
      log "worker for $master: $cores cores, $memory, until the master has not answered for ${BENCH_SPARK_MASTER_GRACE_S} s"
    fi
    sleep "$BENCH_SPARK_POLL_S"
    now=$(date +%s)
    if alive_workers "$status_url" > /dev/null; then
      last_ok=$now
    elif ((now - last_ok >= BENCH_SPARK_MASTER_GRACE_S)); then
      log "the Spark master has not answered for $((now - last_ok)) s: the run is over"
      return 0
    fi
    if ((now >= DEADLINE_EPOCH)); then STATUS=timeout; MESSAGE="deadline reached"; exit 1; fi
    if ! running "$WORKER_PID"; then
      wait "$WORKER_PID" 2>/dev/null
      log "the Spark worker exited (rc $?; see logs/spark-worker.log)"
      ((restarts++ < 3)) || fail "the Spark worker exited 4 times"
      WORKER_PID=
    fi
  done
}

# shellcheck disable=SC2329  # invoked by the EXIT trap
finish() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  if [[ $STATUS == running ]]; then
    if ((rc == 0)); then STATUS=ok; else STATUS=failed; MESSAGE=${MESSAGE:-"$PHASE: exit $rc"}; fi
  fi
  PHASE=finish
  if [[ $BENCH_ROLE == worker ]]; then  # this host's logs only: status.json is the benchmark host's
    spark_stop "$WORKER_PID"
    local id=${BENCH_INSTANCE_ID:-$(hostname)}
    log "status=$STATUS rc=$rc${MESSAGE:+ ($MESSAGE)}: uploading the logs to ${BENCH_RESULTS_URI%/}/workers/$id/"
    uploader publish "$BENCH_RESULTS_URI" --dir "workers/$id=$BENCH_LOG_DIR" \
      || log "upload reported errors (see above); powering off anyway"
    log "powering off: $BENCH_POWEROFF_CMD"
    bash -c "$BENCH_POWEROFF_CMD"
    exit "$rc"
  fi
  [[ -n $MASTER_PID ]] && log "stopping the Spark master" && spark_stop "$MASTER_PID"
  log "status=$STATUS rc=$rc: uploading results and logs to $BENCH_RESULTS_URI, status.json last"
  publish --status-field "status=$STATUS" --status-field "run_id=$BENCH_RUN_ID" \
    --status-field "message=$MESSAGE" --status-field "report=$REPORT_STATE" \
    --status-field "harness_revision=$HARNESS_REVISION" \
    --status-field "scenarios_requested=$BENCH_SCENARIOS" --status-field "scale=$BENCH_SCALE" \
    --status-field "source_table=$BENCH_SOURCE_TABLE" \
    --status-field "engines=$BENCH_ENGINES" --status-field "instance_type=$BENCH_INSTANCE_TYPE" \
    --status-field "started_at=$(date -u -d "@$START_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" \
    --int-field "exit_code=$rc" --int-field "wall_seconds=$(($(date +%s) - START_EPOCH))" \
    --outcomes "$OUTCOMES" \
    || log "upload reported errors (see above); powering off anyway"
  log "powering off: $BENCH_POWEROFF_CMD"
  bash -c "$BENCH_POWEROFF_CMD"
  exit "$rc"
}
trap finish EXIT
trap 'STATUS=interrupted; MESSAGE="$PHASE: terminated by a signal"; exit 143' TERM
trap 'STATUS=interrupted; MESSAGE="$PHASE: interrupted"; exit 130' INT

# --- 1. the hard deadline, first of all ------------------------------------------------------------
PHASE=deadline
log "run $BENCH_RUN_ID: arming the deadline: $BENCH_DEADLINE_CMD"
bash -c "$BENCH_DEADLINE_CMD" || fail "could not arm the deadline"
[[ $BENCH_ROLE == bench || $BENCH_ROLE == worker ]] || fail "BENCH_ROLE must be bench or worker, not '$BENCH_ROLE'"
[[ $BENCH_SPARK_WORKERS =~ ^[0-9]+$ ]] || fail "BENCH_SPARK_WORKERS must be a whole number, not '$BENCH_SPARK_WORKERS'"
if [[ $BENCH_ROLE == worker ]] || ((BENCH_SPARK_WORKERS > 0)); then
  PHASE=node
  [[ -n $BENCH_PRIVATE_IP ]] || BENCH_PRIVATE_IP=$(imds local-ipv4) || fail "no private IP (IMDS local-ipv4)"
  [[ -n $BENCH_INSTANCE_ID ]] || BENCH_INSTANCE_ID=$(imds instance-id) || BENCH_INSTANCE_ID=$(hostname)
  log "$BENCH_ROLE node $BENCH_INSTANCE_ID at $BENCH_PRIVATE_IP"
fi

# --- 2. system packages, SSM agent -------------------------------------------------------------------
PHASE=packages
if [[ $BENCH_INSTALL_SYSTEM_PACKAGES == 1 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  log "installing system packages"
  apt-get update -q || fail "apt-get update"
  apt-get install -y -q --no-install-recommends ca-certificates curl git make xfsprogs \
    python3-venv python3-pip python3-boto3 \
    openjdk-17-jre-headless || fail "apt-get install"
fi
if [[ $BENCH_ENABLE_SSM == 1 ]]; then
  region=${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}
  log "installing the SSM agent (region $region)"
  if curl -fsSL -o /tmp/amazon-ssm-agent.deb \
    "https://s3.$region.amazonaws.com/amazon-ssm-$region/latest/debian_amd64/amazon-ssm-agent.deb" \
    && dpkg -i /tmp/amazon-ssm-agent.deb && systemctl enable --now amazon-ssm-agent; then
    log "SSM agent running"
  else
    log "SSM agent not installed (continuing without it)"
  fi
fi

# --- 3. the data volume ------------------------------------------------------------------------------
PHASE=volume
find_data_device() {  # the one disk that is neither the root disk nor partitioned nor formatted
  local root_src root_disk name
  root_src=$(findmnt -no SOURCE /)
  root_disk=$(lsblk -no PKNAME "$root_src" 2>/dev/null | head -n1)
  [[ -n $root_disk ]] || root_disk=$(basename "$root_src")
  while read -r name type; do
    [[ $type == disk && $name != "$root_disk" ]] || continue
    [[ $(lsblk -n -o NAME "/dev/$name" | wc -l) -eq 1 ]] || continue   # has partitions
    [[ -z $(lsblk -dn -o FSTYPE "/dev/$name") ]] || continue            # already formatted
    echo "/dev/$name"
    return 0
  done < <(lsblk -dn -o NAME,TYPE)
  return 1
}
if [[ $BENCH_DATA_DEVICE != none ]]; then
  dev=$BENCH_DATA_DEVICE
  if [[ $dev == auto ]]; then
    for _ in $(seq 60); do dev=$(find_data_device) && break; sleep 2; done
    [[ $dev != auto && -n $dev ]] || fail "no unformatted data disk found (lsblk: $(lsblk -dn -o NAME,SIZE,TYPE | tr '\n' ' '))"
  fi
  log "formatting $dev (xfs) and mounting it on $BENCH_DATA_DIR"
  mkfs.xfs -f -K "$dev" || fail "mkfs.xfs $dev"
  mkdir -p "$BENCH_DATA_DIR" || fail "mkdir $BENCH_DATA_DIR"
  mount -o noatime "$dev" "$BENCH_DATA_DIR" || fail "mount $dev"
fi
mkdir -p "$BENCH_DATA_DIR/tmp/spark" "$RESULTS_ROOT" || fail "cannot create $BENCH_DATA_DIR"
# Spark's scratch space and every temporary file go to the data volume, not the small root disk.
export TMPDIR=$BENCH_DATA_DIR/tmp SPARK_LOCAL_DIRS=$BENCH_DATA_DIR/tmp/spark
df -h "$BENCH_DATA_DIR"

# --- 4. the harness ----------------------------------------------------------------------------------
PHASE=harness
case $BENCH_HARNESS_SOURCE in
  git)
    [[ -n $BENCH_HARNESS_GIT_URL ]] || fail "BENCH_HARNESS_GIT_URL is empty"
    log "cloning $BENCH_HARNESS_GIT_URL at $BENCH_HARNESS_REF"
    rm -rf "$BENCH_HARNESS_DIR"
    git clone --quiet "$BENCH_HARNESS_GIT_URL" "$BENCH_HARNESS_DIR" || fail "git clone"
    git -C "$BENCH_HARNESS_DIR" checkout --quiet "$BENCH_HARNESS_REF" || fail "git checkout $BENCH_HARNESS_REF"
    HARNESS_REVISION=$(git -C "$BENCH_HARNESS_DIR" rev-parse HEAD)
    ;;
  s3)
    [[ -n $BENCH_HARNESS_ARCHIVE_URI ]] || fail "BENCH_HARNESS_ARCHIVE_URI is empty"
    log "downloading the harness from $BENCH_HARNESS_ARCHIVE_URI"
    for try in 1 2 3 4 5; do  # a new instance role can take a few seconds to be usable
      uploader download "$BENCH_HARNESS_ARCHIVE_URI" "$BENCH_DATA_DIR/tmp/harness.tar.gz" && break
      ((try < 5)) || fail "download of $BENCH_HARNESS_ARCHIVE_URI"
      sleep 15
    done
    rm -rf "$BENCH_HARNESS_DIR" && mkdir -p "$BENCH_HARNESS_DIR"
    tar -xzf "$BENCH_DATA_DIR/tmp/harness.tar.gz" -C "$BENCH_HARNESS_DIR" || fail "tar -x"
    [[ -f $BENCH_HARNESS_DIR/.bench-source ]] && HARNESS_REVISION=$(head -n1 "$BENCH_HARNESS_DIR/.bench-source")
    ;;
  dir)
    [[ -d $BENCH_HARNESS_DIR ]] || fail "harness directory $BENCH_HARNESS_DIR does not exist"
    HARNESS_REVISION=$(git -C "$BENCH_HARNESS_DIR" rev-parse HEAD 2>/dev/null || echo "dir:$BENCH_HARNESS_DIR")
    ;;
  *) fail "BENCH_HARNESS_SOURCE must be git, s3 or dir, not '$BENCH_HARNESS_SOURCE'" ;;
esac
log "harness revision: $HARNESS_REVISION"

PHASE=setup
if [[ $BENCH_SKIP_SETUP != 1 ]]; then
  log "make setup (log: $BENCH_LOG_DIR/setup.log)"
  make -C "$BENCH_HARNESS_DIR" setup > "$BENCH_LOG_DIR/setup.log" 2>&1 || fail "make setup (see logs/setup.log)"
fi
"$BENCH_CMD" --version || fail "$BENCH_CMD does not run"

# --- the worker role ends here: a Spark worker until the master is gone ------------------------------
if [[ $BENCH_ROLE == worker ]]; then
  PHASE=spark-worker
  run_spark_worker
  exit 0
fi

"$BENCH_CMD" list > "$BENCH_LOG_DIR/bench-list.txt" 2>&1 || fail "bench list"
if "$BENCH_CMD" doctor > "$BENCH_LOG_DIR/doctor.txt" 2>&1; then log "bench doctor: ok"
else log "bench doctor reported problems (see logs/doctor.txt); running anyway"; fi

accepts() { [[ $("$BENCH_CMD" "$1" --help 2>/dev/null) == *"$2"* ]]; }  # no pipe: pipefail + grep -q
common=()

# --- 4b. the Spark master, when the run has workers ---------------------------------------------------
if ((BENCH_SPARK_WORKERS > 0)); then
  PHASE=spark-cluster
  accepts run --spark-master || fail "this harness's bench run has no --spark-master: it cannot use the workers"
  start_spark_master
  # Spark's driver runs here and is reached by the executors at this address (ports 7078, 7079).
  export BENCH_SPARK_DRIVER_HOST=$BENCH_PRIVATE_IP
  common+=(--spark-master "$SPARK_MASTER_URL")
  if ((BENCH_SPARK_MASTER_WEBUI_PORT != 8080)); then
    common+=(--option "spark.master_webui=http://$BENCH_PRIVATE_IP:$BENCH_SPARK_MASTER_WEBUI_PORT")
  fi
fi

# --- 5. the benchmark --------------------------------------------------------------------------------
PHASE=run
if [[ -n $BENCH_INSTANCE_TYPE ]] && accepts run --instance-type; then common+=(--instance-type "$BENCH_INSTANCE_TYPE"); fi
[[ -n $BENCH_MEMORY_BUDGET ]] && common+=(--memory-budget "$BENCH_MEMORY_BUDGET")
read -r -a extra <<< "$BENCH_EXTRA_RUN_ARGS"
# the input: generated at BENCH_SCALE, or a zero-copy clone of your own table (read-only: the role cannot
# write its prefix; the clone goes to this run's warehouse)
input=(--scale "$BENCH_SCALE")
if [[ -n $BENCH_SOURCE_TABLE ]]; then
  [[ -n $BENCH_SOURCE_CATALOG_URI ]] || fail "BENCH_SOURCE_TABLE needs BENCH_SOURCE_CATALOG_URI"
  source_catalog=$BENCH_DATA_DIR/source-catalog.yaml
  uploader download "$BENCH_SOURCE_CATALOG_URI" "$source_catalog" || fail "download of $BENCH_SOURCE_CATALOG_URI"
  input=(--source-catalog "$source_catalog" --source-table "$BENCH_SOURCE_TABLE")
  [[ -n $BENCH_SOURCE_SNAPSHOT ]] && input+=(--source-snapshot "$BENCH_SOURCE_SNAPSHOT")
  log "your own table $BENCH_SOURCE_TABLE (catalog file from $BENCH_SOURCE_CATALOG_URI), cloned, never written"
fi
any_failed=0
timed_out=0
for scenario in ${BENCH_SCENARIOS//,/ }; do
  left=$((DEADLINE_EPOCH - $(date +%s)))
  if ((left <= 0)); then
    log "no time left for $scenario: skipped"
    printf '%s\t%s\t%s\n' "$scenario" "skipped" 0 >> "$OUTCOMES"
    timed_out=1
    continue
  fi
  case $BENCH_WAREHOUSE in
    s3://*) warehouse=${BENCH_WAREHOUSE%/}/$scenario ;;
    *) warehouse=$BENCH_WAREHOUSE/$scenario; mkdir -p "$warehouse" ;;
  esac
  log "bench run $scenario ${input[*]} --engines $BENCH_ENGINES (at most ${left} s; log: logs/bench-$scenario.log)"
  t0=$(date +%s)
  timeout --kill-after=60 "$left" "$BENCH_CMD" run "$scenario" "${input[@]}" \
    --engines "$BENCH_ENGINES" --reps "$BENCH_REPS" --timeout "$BENCH_ENGINE_TIMEOUT" \
    --results-dir "$RESULTS_ROOT" --run-id "$BENCH_RUN_ID" --warehouse "$warehouse" \
    "${common[@]}" "${extra[@]}" > "$BENCH_LOG_DIR/bench-$scenario.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  printf '%s\t%s\t%s\n' "$scenario" "$rc" "$secs" >> "$OUTCOMES"
  if ((rc == 124 || rc == 137)); then
    timed_out=1; log "$scenario: stopped at the deadline after ${secs} s"
  elif ((rc != 0)); then
    any_failed=1; log "$scenario: bench run exited $rc after ${secs} s (see logs/bench-$scenario.log)"
  else
    log "$scenario: done in ${secs} s"
  fi
  if [[ $BENCH_CLEAN_WAREHOUSE == 1 && $warehouse != s3://* ]]; then rm -rf "$warehouse"; fi
  publish || log "partial upload reported errors"
done

# --- 6. the report -----------------------------------------------------------------------------------
PHASE=report
if [[ $BENCH_REPORT == 1 ]]; then
  if "$BENCH_CMD" report --help > /dev/null 2>&1; then
    args=()
    if [[ -n $BENCH_INSTANCE_TYPE ]] && accepts report --instance-type; then args+=(--instance-type "$BENCH_INSTANCE_TYPE"); fi
    if "$BENCH_CMD" report "$RESULTS_ROOT/$BENCH_RUN_ID" --out "$REPORT_FILE" "${args[@]}" > "$BENCH_LOG_DIR/report.log" 2>&1; then
      REPORT_STATE=ok; log "report written"
    else
      REPORT_STATE=failed; log "bench report failed (see logs/report.log)"
    fi
  else
    REPORT_STATE=unavailable; log "this harness has no 'bench report' command: report skipped"
  fi
fi

PHASE=finished
if ((timed_out)); then STATUS=timeout; MESSAGE="deadline reached (BENCH_MAX_LIFETIME_MIN=$BENCH_MAX_LIFETIME_MIN)"; exit 1; fi
if ((any_failed)); then STATUS=failed; MESSAGE="a bench run exited non-zero (see logs/bench-*.log)"; exit 1; fi
log "all scenarios ran"
exit 0
