#!/usr/bin/env bash
# Builds the meshhub image from the Containerfile, tagged meshhub:<VERSION> and meshhub:latest.
#   scripts/container/build.sh [--base <image>] [podman build options…]
# --base: the Node 20 image to build on (default: the Containerfile's, node:20-bookworm-slim);
# CI passes localhost/meshhub-base:bookworm-node20 (scripts/container/make-base.sh).
# CONTAINER_ENGINE=docker uses docker instead of podman.
set -euo pipefail
cd "$(dirname "$0")/../.."
ENGINE="${CONTAINER_ENGINE:-podman}"
VERSION="$(tr -d '[:space:]' <VERSION)"
ARGS=()
if [ "${1:-}" = "--base" ]; then
  [ -n "${2:-}" ] || { echo "build.sh: --base needs an image name" >&2; exit 2; }
  ARGS+=(--build-arg "BASE_IMAGE=$2")
  shift 2
fi
# podman's default (OCI) image format has no HEALTHCHECK; the docker format keeps it.
[ "$ENGINE" = podman ] && ARGS+=(--format docker)
"$ENGINE" build "${ARGS[@]}" -t "meshhub:$VERSION" -t meshhub:latest -f Containerfile "$@" .
echo "build.sh: built meshhub:$VERSION (and meshhub:latest)"
