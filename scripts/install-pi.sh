#!/usr/bin/env bash
# Installs meshhub on a Raspberry Pi (Raspberry Pi OS / Debian, as root):
#   sudo bash scripts/install-pi.sh
# - Node.js 20+ must be installed (apt-get install nodejs npm, or NodeSource).
# - Copies this checkout to /opt/meshhub, builds it, creates the unprivileged `meshhub` user
#   (member of `dialout` for the radio), installs the hardened systemd unit and starts it.
# Re-running it upgrades in place; data in /var/lib/meshhub is kept.
# The code under /opt/meshhub belongs to root and nobody else can write it: not the checkout's
# owner (the copy never keeps the archive's owners) and not the service user, which owns only
# its data folder (README "Files on disk").
#   --copy-only   only copy the checkout and lock the code down (no packages, build or service);
#                 MESHHUB_PREFIX installs somewhere else than /opt/meshhub (the tests use both).
# Not run in CI: it changes the system.
set -euo pipefail
umask 022

PREFIX=${MESHHUB_PREFIX:-/opt/meshhub}
CONF_DIR=/etc/meshhub
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COPY_ONLY=false
[[ ${1:-} == --copy-only ]] && COPY_ONLY=true

if [[ $(id -u) -ne 0 ]]; then echo "install-pi.sh: run as root (sudo)" >&2; exit 1; fi

# The code: owned by root, readable by all, writable by root alone (a file the checkout's owner
# or the service user could rewrite would run as the service at its next start).
lock_down_code() {
  chown -R root:root "$PREFIX"
  chmod -R u+rwX,go+rX,go-w "$PREFIX"
}

# Copy the checkout without local state. As root, tar would keep the archive's owners and modes
# (the checkout's user): --no-same-owner makes root the owner, --no-same-permissions applies the
# umask (022).
copy_code() {
  mkdir -p "$PREFIX"
  tar -C "$SRC_DIR" --exclude=./node_modules --exclude=./dist --exclude=./data --exclude=./.git -cf - . |
    tar -C "$PREFIX" --no-same-owner --no-same-permissions -xf -
  lock_down_code
}

if $COPY_ONLY; then
  copy_code
  exit 0
fi

command -v node >/dev/null || { echo "install-pi.sh: install Node.js 20 or newer first" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || {
  echo "install-pi.sh: Node.js 20 or newer is required (found $(node --version))" >&2; exit 1; }
# better-sqlite3 and serialport compile from source on ARM.
apt-get install -y --no-install-recommends python3 make g++ >/dev/null

id meshhub >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin meshhub
usermod -a -G dialout meshhub

copy_code
cd "$PREFIX"
npm ci --no-audit --no-fund
npm run build
npm prune --omit=dev
# What the build and npm wrote (dist/, node_modules/) too.
lock_down_code

mkdir -p "$CONF_DIR"
if [[ ! -f $CONF_DIR/meshhub.env ]]; then
  cat > "$CONF_DIR/meshhub.env" <<'ENV'
# meshhub settings; see /opt/meshhub/README.md. Restart with: systemctl restart meshhub
HTTP_PORT=8080
RADIO=auto
LOG_LEVEL=info
ENV
fi
# Settings may hold secrets: the service reads them, only root writes them.
chown root:meshhub "$CONF_DIR/meshhub.env"
chmod 0640 "$CONF_DIR/meshhub.env"

install -o root -g root -m 0644 "$PREFIX/systemd/meshhub.service" /etc/systemd/system/meshhub.service
systemctl daemon-reload
systemctl enable --now meshhub
systemctl --no-pager status meshhub || true
echo "meshhub is running: http://$(hostname -I | awk '{print $1}'):8080/"
