#!/usr/bin/env bash
# Prints the path of a containers.conf for podman on a CI machine that is itself a container or a
# restricted VM, written next to nothing of the system's own (export CONTAINERS_CONF=$(this)):
# - ulimits no higher than this shell's hard limits: rootful podman asks for nofile=1048576 and a
#   huge nproc by default, and without CAP_SYS_RESOURCE the runtime then fails with
#   "setrlimit RLIMIT_NOFILE: Operation not permitted";
# - runc where cgroups are mounted in hybrid mode (v1 controllers with /sys/fs/cgroup/unified):
#   crun 1.8 refuses those ("cgroups in hybrid mode not supported").
# A workstation or server with ordinary podman needs none of this.
set -euo pipefail
CONF="${TMPDIR:-/tmp}/meshhub-containers.conf"
NOFILE="$(ulimit -Hn)"
[ "$NOFILE" = unlimited ] && NOFILE=1048576
{
  echo '[containers]'
  echo "default_ulimits = [\"nofile=$NOFILE:$NOFILE\", \"nproc=16384:16384\"]"
  if [ -d /sys/fs/cgroup/unified ] && command -v runc >/dev/null; then
    echo '[engine]'
    echo 'runtime = "runc"'
  fi
} >"$CONF"
echo "$CONF"
