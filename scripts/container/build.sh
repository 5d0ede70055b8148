#!/usr/bin/env bash
# Builds the meshhub image from the Containerfile, tagged meshhub:<VERSION> and meshhub:latest.
#   scripts/container/build.sh [--base <image>] [--build-base <image>] [--arch arm64|amd64]
#                              [podman build options…]
# --base: the Node 20 image to build on (default: the Containerfile's, node:20-bookworm-slim);
# CI passes localhost/meshhub-base:bookworm-node20 (scripts/container/make-base.sh).
# --arch: an image for another architecture (arm64 for a Raspberry Pi, from an x86-64 machine),
# tagged meshhub:<VERSION>-<arch> and meshhub:latest-<arch>; its build stage runs natively and
# cross-compiles, its runtime stage runs under qemu-user-static (Containerfile). --build-base: the
# build stage's base when it is not --base (CI's local bases are one per architecture).
# CONTAINER_ENGINE=docker uses docker (buildx) instead of podman.
set -euo pipefail
cd "$(dirname "$0")/../.."
ENGINE="${CONTAINER_ENGINE:-podman}"
VERSION="$(tr -d '[:space:]' <VERSION)"
ARGS=()
SUFFIX=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base | --build-base | --arch)
      [ -n "${2:-}" ] || { echo "build.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --base) ARGS+=(--build-arg "BASE_IMAGE=$2") ;;
        --build-base) ARGS+=(--build-arg "BUILD_IMAGE=$2") ;;
        --arch) ARGS+=(--platform "linux/$2"); SUFFIX="-$2" ;;
      esac
      shift 2
      ;;
    *) break ;;
  esac
done
if [ "$ENGINE" = podman ]; then
  # podman's default (OCI) image format has no HEALTHCHECK; the docker format keeps it.
  ARGS+=(--format docker)
  # podman before 4.6 (Debian bookworm's 4.3) does not set these; the build stage runs on them.
  BUILD_ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')"
  ARGS+=(--build-arg "BUILDARCH=$BUILD_ARCH" --build-arg "BUILDPLATFORM=linux/$BUILD_ARCH")
fi
"$ENGINE" build "${ARGS[@]}" -t "meshhub:$VERSION$SUFFIX" -t "meshhub:latest$SUFFIX" -f Containerfile "$@" .
echo "build.sh: built meshhub:$VERSION$SUFFIX (and meshhub:latest$SUFFIX)"
