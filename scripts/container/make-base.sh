#!/usr/bin/env bash
# Builds a local stand-in for docker.io/library/node:20-bookworm-slim without any image registry:
# a Debian bookworm minbase from the machine's own apt mirror (mmdebstrap) plus this machine's
# Node.js binary, npm and headers, imported into podman as localhost/meshhub-base:bookworm-node20.
# CI uses it because no registry is reachable there; users build on the real Node image.
#   scripts/container/make-base.sh          build it unless it exists
#   scripts/container/make-base.sh --force  rebuild it
# On a machine that is itself a container (CI), podman may first need
# `export CONTAINERS_CONF=$(scripts/container/ci-containers-conf.sh)`; the image test does that.
set -euo pipefail

IMAGE="${MESHHUB_BASE_IMAGE:-localhost/meshhub-base:bookworm-node20}"
if [ "${1:-}" != "--force" ] && podman image exists "$IMAGE"; then
  echo "make-base: $IMAGE exists (--force rebuilds it)"
  exit 0
fi
for tool in mmdebstrap podman node; do
  command -v "$tool" >/dev/null || {
    echo "make-base: $tool is not installed (apt-get install -y mmdebstrap podman)" >&2
    exit 1
  }
done

# The same mirror apt uses here (deb822 or one-line sources), so no other network is needed.
MIRROR="$( (grep -rhoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null || true) |
  awk '{print $2}' | grep -E '/debian/?$' | head -1)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

# Node's install prefix: the binary is <prefix>/bin/node, npm lives in <prefix>/lib/node_modules/npm
# and the headers node-gyp compiles better-sqlite3 against in <prefix>/include/node.
NODE_BIN="$(node -p process.execPath)"
PREFIX="$(dirname "$(dirname "$NODE_BIN")")"
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
[ "$NODE_MAJOR" = 20 ] || echo "make-base: warning: this machine has Node $NODE_MAJOR, the image is tagged node20" >&2
for p in "$PREFIX/lib/node_modules/npm" "$PREFIX/include/node"; do
  [ -e "$p" ] || { echo "make-base: $p is missing (Node's npm or headers)" >&2; exit 1; }
done

ROOTFS_TAR="$(mktemp --suffix=.tar)"
trap 'rm -f "$ROOTFS_TAR"' EXIT
echo "make-base: debootstrapping bookworm from $MIRROR with Node $(node --version) from $PREFIX"
# libstdc++6: node's own dependency; python3, make, g++: the build stage compiles the native modules
# (better-sqlite3, serialport); ca-certificates: npm reaches the registry over https. This machine's
# own extra authorities (/usr/local/share/ca-certificates, e.g. a proxy's) are trusted in the base
# too, so npm inside the build reaches the registry the way npm on the host does.
mmdebstrap --variant=minbase --quiet \
  --include=libstdc++6,ca-certificates,python3,make,g++ \
  --customize-hook="copy-in $NODE_BIN /usr/local/bin" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" \"\$1/usr/local/include\"" \
  --customize-hook="copy-in $PREFIX/lib/node_modules/npm /usr/local/lib/node_modules" \
  --customize-hook="copy-in $PREFIX/include/node /usr/local/include" \
  --customize-hook='ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
  --customize-hook='ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" &&
      chroot "$1" update-ca-certificates >/dev/null; fi' \
  --customize-hook='chroot "$1" useradd --uid 1000 --create-home --shell /bin/bash node' \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  bookworm "$ROOTFS_TAR" "$MIRROR"

podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_VERSION='"$(node -p process.versions.node)" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  "$ROOTFS_TAR" "$IMAGE" >/dev/null
podman run --rm --network=none "$IMAGE" node -e 'console.log("make-base: " + process.version + " runs in the image")'
echo "make-base: built $IMAGE"
