#!/usr/bin/env bash
# countersign, privilege-separated on one host (run as root; idempotent).
#
#   COUNTERSIGN_SIGNER_LEDGER_URL='postgres:///countersign?host=/run/postgresql&user=countersign_signer&password=...' \
#   COUNTERSIGN_HEAD_LEDGER_URL='postgres:///countersign?host=/run/postgresql&user=countersign_head&password=...' \
#   (the server's Unix socket: a password over TCP without sslmode=verify-full
#   is refused when the ledger is opened; any local user can hold 127.0.0.1:5432
#   while PostgreSQL restarts)
#     deploy/setup-system.sh [options] AGENT_USER
#
# `countersign setup --agent-user AGENT_USER` (the package's one command)
# runs this script, compiled into the binary, after preparing the local
# PostgreSQL server for peer authentication: each URL then names the role
# of the OS user that uses it and holds no password, and the gateway's
# home gets its own (COUNTERSIGN_GATEWAY_LEDGER_URL, optional here: the
# heads' URL by default).
#
# What it does:
#   1. creates the system user that runs the signer and the console
#      (default `countersign`) and its state directory (0700, its own), and
#      the system user that runs premise programs (default
#      `countersign-premise`: no home, no login, no access to the signer's
#      state directory);
#   2. initializes the signer's home inside it as that user
#      (`countersign init`): principal, development CA and its key, the
#      signer's TLS certificate, the approver and console credentials, the
#      proof-signing key, all readable by that user only; writes its
#      config.toml (signer and console addresses, the signer's ledger URL,
#      `[passkeys] required = true`, and `[premise] socket`: the signer
#      runs no premise program itself, it asks the premise service, which
#      runs as the premise user);
#   3. creates the system user that delivers notifications (default
#      `countersign-notify`) and its home in its own state directory
#      (default /var/lib/countersign-notify/home, 0700): config.toml (the
#      signer's address), principal, pki/ca.pem and the notifier credential
#      (pki/notifier.pem, pki/notifier.key), which the signer accepts for
#      reading and acknowledging notifications and listing the console's
#      Web Push devices only; and the Web Push VAPID key pair `init` made,
#      whose private half is moved out of the signer's home (the console
#      keeps the public half to give browsers). No approver or head
#      credential, no CA key, no signing key. The signer opens no outbound
#      connection: this user's `countersign notify serve` does. To turn
#      notifications on, add `[notify]` with its channels to that home's
#      config.toml and `[notify]` to the signer's (docs/notifications.md);
#   4. creates the system user that runs the MCP gateway (default
#      `countersign-gateway`), its state directory (default
#      /var/lib/countersign-gateway, 0700) with `secrets/` (0700: the
#      upstream servers' credentials go there, 0600, owned by that user),
#      and its head home in it (head credential, registry, and the
#      signer's gateway.toml and gateway-pins.json when they exist). The
#      gateway holds the upstreams' credentials, so it is not the agent's
#      user: it serves `countersign mcp --listen` on a Unix socket to
#      AGENT_USER only (the kernel reports each connection's user), named
#      in the unit's environment file (default /etc/countersign/gateway.env,
#      `--gateway-env FILE`), and the agent's MCP client reaches it with
#      `countersign mcp --connect`; no port, no credential;
#   5. gives AGENT_USER a head-only home (0700, its own): config.toml (the
#      signer's and the console's addresses, the heads' ledger URL, and
#      `[passkeys]` too, so that its heads name the console at
#      https://console.localhost:<port> and say a passkey is needed), principal,
#      pki/ca.pem, pki/head.pem, pki/head.key and operations.toml. No
#      approver credential, no CA key, no signing key.
#
# Every approval needs the person's passkey (WebAuthn with user
# verification, in the console): `countersign approve` at a terminal
# refuses (passkey_required) and names the console page. Once the units run,
# the administrator prints a one-time enrolment code for each passkey the
# console's approver enrols (`--approver console`) and a pairing link for the person's browser; the script prints both
# commands at the end.
#
# The ledger is PostgreSQL: a SQLite file cannot be shared by two users
# (every process refuses a ledger that others can read or write), and a
# SQLite file the agent could write would let it drop the append-only
# triggers. Prepare the database first (docs/postgresql.md): apply the
# schema with the owner's URL, then deploy/postgres-roles.sql. The URLs are
# read from the environment, not the command line, so that no password shows
# in the process list; they end up only in each user's 0600 config.toml.
#
# It installs no systemd unit and starts nothing: see deploy/systemd/README.md.
# Re-running it keeps the principal, the keys and the certificates, rewrites
# both config.toml files and copies the head credential and the registry
# again (run it after changing the signer's operations.toml).
set -euo pipefail

usage() {
    cat >&2 <<'EOF'
usage: setup-system.sh [--signer-user NAME] [--premise-user NAME] [--premise-socket PATH]
                       [--notify-user NAME] [--notify-state-dir DIR]
                       [--gateway-user NAME] [--gateway-state-dir DIR] [--gateway-env FILE]
                       [--state-dir DIR] [--agent-home DIR]
                       [--bin-dir DIR] [--signer-addr ADDR] [--console-addr ADDR]
                       AGENT_USER
environment (required): COUNTERSIGN_SIGNER_LEDGER_URL, COUNTERSIGN_HEAD_LEDGER_URL
             (optional): COUNTERSIGN_GATEWAY_LEDGER_URL (default: the heads' URL)
EOF
    exit 2
}

die() {
    echo "setup-system.sh: $*" >&2
    exit 1
}

signer_user=countersign
premise_user=countersign-premise
premise_socket=/run/countersign-premise/premise.sock
state_dir=/var/lib/countersign
notify_user=countersign-notify
notify_state_dir=/var/lib/countersign-notify
gateway_user=countersign-gateway
gateway_state_dir=/var/lib/countersign-gateway
gateway_env=/etc/countersign/gateway.env
agent_home=
bin_dir=/usr/local/bin
signer_addr=127.0.0.1:7443
console_addr=127.0.0.1:7444
agent=

while [ $# -gt 0 ]; do
    case "$1" in
        --signer-user) signer_user=${2:?}; shift 2 ;;
        --premise-user) premise_user=${2:?}; shift 2 ;;
        --premise-socket) premise_socket=${2:?}; shift 2 ;;
        --notify-user) notify_user=${2:?}; shift 2 ;;
        --notify-state-dir) notify_state_dir=${2:?}; shift 2 ;;
        --gateway-user) gateway_user=${2:?}; shift 2 ;;
        --gateway-state-dir) gateway_state_dir=${2:?}; shift 2 ;;
        --gateway-env) gateway_env=${2:?}; shift 2 ;;
        --state-dir) state_dir=${2:?}; shift 2 ;;
        --agent-home) agent_home=${2:?}; shift 2 ;;
        --bin-dir) bin_dir=${2:?}; shift 2 ;;
        --signer-addr) signer_addr=${2:?}; shift 2 ;;
        --console-addr) console_addr=${2:?}; shift 2 ;;
        -h|--help) usage ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) [ -z "$agent" ] || usage; agent=$1; shift ;;
    esac
done
[ -n "$agent" ] || usage

[ "$(id -u)" -eq 0 ] || die "run as root (it creates a system user and changes ownership)"
signer_ledger=${COUNTERSIGN_SIGNER_LEDGER_URL:-}
head_ledger=${COUNTERSIGN_HEAD_LEDGER_URL:-}
gateway_ledger=${COUNTERSIGN_GATEWAY_LEDGER_URL:-$head_ledger}
for url in "$signer_ledger" "$head_ledger" "$gateway_ledger"; do
    case "$url" in
        postgres://*|postgresql://*) ;;
        *) die "COUNTERSIGN_SIGNER_LEDGER_URL and COUNTERSIGN_HEAD_LEDGER_URL must be postgres:// URLs (a SQLite ledger cannot be shared by two users)" ;;
    esac
done
case "$state_dir" in /*) ;; *) die "--state-dir must be absolute" ;; esac
case "$premise_socket" in /*) ;; *) die "--premise-socket must be absolute" ;; esac
case "$notify_state_dir" in /*) ;; *) die "--notify-state-dir must be absolute" ;; esac
case "$gateway_state_dir" in /*) ;; *) die "--gateway-state-dir must be absolute" ;; esac
for bin in countersign countersign-signer countersign-premise; do
    [ -x "$bin_dir/$bin" ] || die "$bin_dir/$bin is not an executable (--bin-dir)"
done
id -u "$agent" >/dev/null 2>&1 || die "no such user: $agent"
[ "$agent" != "$signer_user" ] || die "the agent's user must not be the signer's user"
[ "$premise_user" != "$signer_user" ] || die "the premise user must not be the signer's user"
[ "$premise_user" != "$agent" ] || die "the premise user must not be the agent's user"
for other in "$signer_user" "$premise_user" "$agent"; do
    [ "$notify_user" != "$other" ] || die "the notify user must be a user of its own"
done
for other in "$signer_user" "$premise_user" "$agent" "$notify_user"; do
    [ "$gateway_user" != "$other" ] || die "the gateway user must be a user of its own"
done
[ "$agent" != root ] || die "the agent's user must not be root"
if [ -z "$agent_home" ]; then
    agent_home="$(getent passwd "$agent" | cut -d: -f6)/.config/countersign"
fi
case "$agent_home" in /*) ;; *) die "--agent-home must be absolute" ;; esac

# 1. The signer's user and its state directory.
if ! id -u "$signer_user" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir "$state_dir" \
        --shell /usr/sbin/nologin --comment "countersign signer" "$signer_user"
fi
install -d -m 0700 -o "$signer_user" -g "$signer_user" "$state_dir"
home="$state_dir/home"

# The premise programs' user: its own group, no home, no login, and no way
# into the state directory above (0700, the signer's). The signer reaches
# it only through the premise service's socket.
if ! id -u "$premise_user" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin --comment "countersign premise programs" "$premise_user"
fi

as_signer() {
    (cd / && runuser -u "$signer_user" -- env -u COUNTERSIGN_HOME \
        COUNTERSIGN_SIGNER_BIN="$bin_dir/countersign-signer" "$@")
}

# 2. The signer's home, created by its own user (umask 077 on every file).
as_signer "$bin_dir/countersign" --home "$home" init >/dev/null

# Writes stdin to $2 as user $1, 0600, replacing it atomically.
# The script text is single-quoted on purpose: its $1 is the inner shell's.
# shellcheck disable=SC2016
write_as() {
    local user=$1 path=$2
    (cd / && runuser -u "$user" -- sh -c \
        'umask 077 && cat > "$1.new" && mv -f "$1.new" "$1"' sh "$path")
}

write_as "$signer_user" "$home/config.toml" <<EOF
# Written by deploy/setup-system.sh (re-running it rewrites this file).
[signer]
addr = "$signer_addr"
[ledger]
url = "$signer_ledger"
[console]
addr = "$console_addr"
[passkeys]
required = true
[premise]
socket = "$premise_socket"
EOF

# 3. The notify user, its state directory and its home: the notifier
# credential only. Root reads the files out of the signer's home and the
# notify user writes them into its own, as for the agent below.
if ! id -u "$notify_user" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir "$notify_state_dir" \
        --shell /usr/sbin/nologin --comment "countersign notifications" "$notify_user"
fi
install -d -m 0700 -o "$notify_user" -g "$notify_user" "$notify_state_dir"
notify_home="$notify_state_dir/home"
# shellcheck disable=SC2016 # $1 is the inner shell's
(cd / && runuser -u "$notify_user" -- sh -c \
    'umask 077 && install -d -m 0700 "$1" "$1/pki" "$1/notify"' sh "$notify_home")
for file in principal pki/ca.pem pki/notifier.pem pki/notifier.key; do
    write_as "$notify_user" "$notify_home/$file" <"$home/$file"
done
# The Web Push VAPID key pair: only the process that sends reads the
# private half, so it moves to the notify home with a copy of the public
# half; the signer's home keeps the public half, which its console gives
# browsers to subscribe with (and `init` then makes no new pair there).
if [ -e "$home/notify/vapid.key" ]; then
    for file in notify/vapid.key notify/vapid.pub; do
        write_as "$notify_user" "$notify_home/$file" <"$home/$file"
    done
    rm -f "$home/notify/vapid.key"
fi
if [ ! -e "$notify_home/config.toml" ]; then
    write_as "$notify_user" "$notify_home/config.toml" <<EOF
# Written by deploy/setup-system.sh: the notify process's home (the
# notifier credential only). Add [notify] with its channels here, and
# [notify] to the signer's config.toml, to turn notifications on
# (docs/notifications.md); re-running the script keeps this file.
[signer]
addr = "$signer_addr"
EOF
fi

# Writes a head-only home into $2 (already made by user $1), as that user:
# the head's files read out of the signer's home by root, and a config.toml
# naming the signer, the heads' ledger ($3) and the console. No approver
# credential, no CA key, no signing key.
write_head_home() {
    local user=$1 dir=$2 ledger=$3
    for file in principal operations.toml pki/ca.pem pki/head.pem pki/head.key; do
        write_as "$user" "$dir/$file" <"$home/$file"
    done
    write_as "$user" "$dir/config.toml" <<EOF
# Written by deploy/setup-system.sh: a head-only home (no approver
# credential, no CA key, no signing key). Re-running the script rewrites it.
[signer]
addr = "$signer_addr"
[ledger]
url = "$ledger"
[console]
addr = "$console_addr"
[passkeys]
required = true
EOF
}

# 4. The gateway's user, its state directory, its secrets directory and its
# head home: the head credential, the registry and the signer's gateway
# files, which root reads out of the signer's home and the gateway's user
# writes into its own.
if ! id -u "$gateway_user" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir "$gateway_state_dir" \
        --shell /usr/sbin/nologin --comment "countersign MCP gateway" "$gateway_user"
fi
install -d -m 0700 -o "$gateway_user" -g "$gateway_user" "$gateway_state_dir"
gateway_home="$gateway_state_dir/home"
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
(cd / && runuser -u "$gateway_user" -- sh -c \
    'umask 077 && install -d -m 0700 "$1" "$1/pki" "$2"' \
    sh "$gateway_home" "$gateway_state_dir/secrets")
write_head_home "$gateway_user" "$gateway_home" "$gateway_ledger"
for file in gateway.toml gateway-pins.json; do
    if [ -e "$home/$file" ]; then
        write_as "$gateway_user" "$gateway_home/$file" <"$home/$file"
    fi
done

# 5. The agent's head-only home. Root reads the head's files out of the
# signer's home and the agent's user writes them into its own: root never
# writes under a directory the agent controls (it could plant symlinks).
# shellcheck disable=SC2016 # $1 is the inner shell's
(cd / && runuser -u "$agent" -- sh -c 'umask 077 && install -d -m 0700 "$1" "$1/pki"' \
    sh "$agent_home")
write_head_home "$agent" "$agent_home" "$head_ledger"

echo "signer home: $home (user $signer_user)"
echo "premise programs: user $premise_user, service socket $premise_socket"
echo "notifications: user $notify_user, home $notify_home (off until [notify] is configured)"
# The one OS user the gateway serves on its Unix socket (the unit's
# EnvironmentFile=): root's file, readable by all, naming no secret.
case "$gateway_env" in /*) ;; *) die "--gateway-env must be absolute" ;; esac
install -d -m 0755 "$(dirname "$gateway_env")"
printf 'COUNTERSIGN_AGENT_USER=%s\n' "$agent" >"$gateway_env.new"
chmod 0644 "$gateway_env.new"
mv -f "$gateway_env.new" "$gateway_env"

echo "MCP gateway: user $gateway_user, home $gateway_home, upstream credentials in $gateway_state_dir/secrets"
echo "  serves $agent only, on unix:/run/countersign-gateway/mcp.sock ($gateway_env); the agent's MCP client runs:"
echo "    $bin_dir/countersign mcp --connect unix:/run/countersign-gateway/mcp.sock --server-user $gateway_user"
echo "head-only home for $agent: $agent_home"
cat <<EOF
passkeys: required for every approval, in the console at https://console.localhost:${console_addr##*:}/
next, once the signer and the console run (deploy/systemd/README.md):
  a one-time enrolment code for each passkey the console enrols (valid 30 minutes, one attempt):
    runuser -u $signer_user -- $bin_dir/countersign-signer passkeys enrolment-code --approver console --home $home
  the console's CA (public, name-constrained), for the person's browser to trust once:
    runuser -u $signer_user -- $bin_dir/countersign --home $home console trust --pem > console-ca.pem
  and, as the person, compare its fingerprint and import it (certutil: libnss3-tools):
    $bin_dir/countersign console trust --ca console-ca.pem --import
  a pairing link for the person's browser (at a terminal):
    runuser -u $signer_user -- $bin_dir/countersign --home $home console pair
  then open the link, enrol the passkey on the Passkeys page with the code,
  and approve proposals there.
EOF
