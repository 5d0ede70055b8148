#!/usr/bin/env bash
# Installs meshhub on a Raspberry Pi (Raspberry Pi OS / Debian, as root):
#   sudo bash scripts/install-pi.sh
# - Node.js 20+ must be installed (apt-get install nodejs npm, or NodeSource).
# - Copies this checkout to /opt/meshhub, builds it, creates the unprivileged `meshhub` user
#   (member of `dialout` for the radio), installs the hardened systemd unit and starts it.
# Re-running it upgrades in place; data in /var/lib/meshhub is kept.
# Not run in CI: it changes the system.
set -euo pipefail

PREFIX=/opt/meshhub
CONF_DIR=/etc/meshhub
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [[ $(id -u) -ne 0 ]]; then echo "run as root (sudo)" >&2; exit 1; fi
command -v node >/dev/null || { echo "install Node.js 20 or newer first" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || {
  echo "Node.js 20 or newer is required (found $(node --version))" >&2; exit 1; }
# better-sqlite3 and serialport compile from source on ARM.
apt-get install -y --no-install-recommends python3 make g++ >/dev/null

id meshhub >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin meshhub
usermod -a -G dialout meshhub

mkdir -p "$PREFIX" "$CONF_DIR"
# Copy the checkout without local state.
tar -C "$SRC_DIR" --exclude=./node_modules --exclude=./dist --exclude=./data --exclude=./.git -cf - . | tar -C "$PREFIX" -xf -
cd "$PREFIX"
npm ci --no-audit --no-fund
npm run build
npm prune --omit=dev

if [[ ! -f $CONF_DIR/meshhub.env ]]; then
  cat > "$CONF_DIR/meshhub.env" <<'ENV'
# meshhub settings; see /opt/meshhub/README.md. Restart with: systemctl restart meshhub
HTTP_PORT=8080
RADIO=auto
LOG_LEVEL=info
ENV
  chmod 0640 "$CONF_DIR/meshhub.env"
  chgrp meshhub "$CONF_DIR/meshhub.env"
fi

install -m 0644 "$PREFIX/systemd/meshhub.service" /etc/systemd/system/meshhub.service
systemctl daemon-reload
systemctl enable --now meshhub
systemctl --no-pager status meshhub || true
echo "meshhub is running: http://$(hostname -I | awk '{print $1}'):8080/"
