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
# - Installs the `meshhub` command, /usr/local/bin/meshhub: `sudo meshhub <command>` runs the
#   installed CLI as the `meshhub` user with the settings in /etc/meshhub/meshhub.env, so it
#   opens the running hub's database and whatever it writes belongs to the service user.
#   --copy-only     only copy the checkout and lock the code down (no packages, build or service);
#   --command-only  only create the `meshhub` user and install the `meshhub` command;
#                   MESHHUB_PREFIX installs somewhere else than /opt/meshhub, MESHHUB_CONF_DIR
#                   and MESHHUB_BIN_DIR name other folders than /etc/meshhub and /usr/local/bin
#                   (the tests use all of these).
# Not run in CI: it changes the system.
set -euo pipefail
umask 022

PREFIX=${MESHHUB_PREFIX:-/opt/meshhub}
CONF_DIR=${MESHHUB_CONF_DIR:-/etc/meshhub}
BIN_DIR=${MESHHUB_BIN_DIR:-/usr/local/bin}
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=${1:-all}

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

create_user() {
  id meshhub >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin meshhub
  usermod -a -G dialout meshhub
}

# The `meshhub` command: this installation's CLI, run as the service runs it. It names the node
# that built the code (its native modules fit that node alone), the code and the settings.
install_command() {
  local node tmp
  node=$(command -v node)
  tmp=$(mktemp)
  {
    echo '#!/bin/bash'
    echo '# The meshhub command, written by scripts/install-pi.sh (re-running it rewrites this file).'
    printf 'NODE=%q\nCLI=%q\nENV_FILE=%q\n' "$node" "$PREFIX/dist/hub/cli.js" "$CONF_DIR/meshhub.env"
    cat <<'COMMAND'
# Runs `node <the V8 flags of hub/node-flags.ts> cli.js "$@"` as the `meshhub` user with the
# settings the service has (systemd/meshhub.service: NODE_ENV=production and
# DATA_DIR=/var/lib/meshhub, then the env file over them); a variable set in the environment
# (`sudo LOG_LEVEL=debug meshhub ...`) wins over both. stdin, stdout, stderr and the exit code
# are the CLI's own.
set -euo pipefail
if [[ ! -f $CLI ]]; then
  echo "meshhub: $CLI is missing; run scripts/install-pi.sh again" >&2
  exit 1
fi
if [[ $(id -un) != meshhub ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "meshhub: run it with sudo, as in: sudo meshhub <command> (it runs as the meshhub user)" >&2
    exit 1
  fi
  # As root: become the service user (with its groups, as the unit has them) and start again.
  if ! id meshhub >/dev/null 2>&1; then
    echo "meshhub: there is no meshhub user; run scripts/install-pi.sh again" >&2
    exit 1
  fi
  home=~meshhub
  if command -v setpriv >/dev/null; then
    exec setpriv --reuid=meshhub --regid=meshhub --init-groups --no-new-privs -- \
      env HOME="$home" USER=meshhub LOGNAME=meshhub "$0" "$@"
  fi
  exec runuser -u meshhub -- "$0" "$@"
fi
umask 0077
declare -A given=()
while read -r name; do given[$name]=1; done < <(compgen -e)
settings=()
for default in NODE_ENV=production DATA_DIR=/var/lib/meshhub; do
  [[ -v given[${default%%=*}] ]] || settings+=("$default")
done
# The env file as systemd reads it: NAME=value lines, # and ; comments, quotes around a value.
if [[ -f $ENV_FILE ]]; then
  line_no=0
  while IFS= read -r line || [[ -n $line ]]; do
    line_no=$((line_no + 1))
    line=${line%$'\r'}
    line=${line#"${line%%[![:space:]]*}"}
    [[ -z $line || $line == '#'* || $line == ';'* ]] && continue
    name=${line%%=*}
    name=${name%"${name##*[![:space:]]}"}
    if [[ $line != *=* || ! $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      echo "meshhub: $ENV_FILE line $line_no is not a NAME=value setting; ignored" >&2
      continue
    fi
    value=${line#*=}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    if [[ ${#value} -ge 2 && ( ($value == \"*\" ) || ($value == \'*\') ) ]]; then
      value=${value:1:${#value}-2}
    fi
    [[ -v given[$name] ]] || settings+=("$name=$value")
  done < "$ENV_FILE"
fi
exec env -- "${settings[@]}" "$NODE" --max-semi-space-size=2 --min-semi-space-size=2 "$CLI" "$@"
COMMAND
  } > "$tmp"
  mkdir -p "$BIN_DIR"
  install -o root -g root -m 0755 "$tmp" "$BIN_DIR/meshhub"
  rm -f "$tmp"
}

case $MODE in
  --copy-only)
    copy_code
    exit 0
    ;;
  --command-only)
    create_user
    install_command
    exit 0
    ;;
  all) ;;
  *) echo "install-pi.sh: unknown option $MODE (--copy-only, --command-only or none)" >&2; exit 2 ;;
esac

command -v node >/dev/null || { echo "install-pi.sh: install Node.js 20 or newer first" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || {
  echo "install-pi.sh: Node.js 20 or newer is required (found $(node --version))" >&2; exit 1; }
# better-sqlite3 and serialport compile from source on ARM.
apt-get install -y --no-install-recommends python3 make g++ >/dev/null

create_user
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

install_command

install -o root -g root -m 0644 "$PREFIX/systemd/meshhub.service" /etc/systemd/system/meshhub.service
systemctl daemon-reload
systemctl enable --now meshhub
systemctl --no-pager status meshhub || true
echo "meshhub is running: http://$(hostname -I | awk '{print $1}'):8080/"
echo "Add the first user: sudo meshhub user add <name> --roles admin --password-stdin"
