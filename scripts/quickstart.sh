#!/usr/bin/env bash
# quickstart.sh - the README's first command.
#
# Installs what the build needs, builds edgesync, then starts on loopback a
# development controller (`edgesync-controller run --dev`: a throwaway CA
# and certificates in its state directory) and an agent for this host,
# connected over mutual TLS, waits until the controller holds the host's
# real state, and shows it with edgesyncctl. Both keep running in the
# background; `scripts/quickstart.sh stop` stops them (`stop controller`
# only the controller): by their pid files, each checked to name the
# edgesync program this script started before it is signalled.
#
# Environment: ES_QUICKSTART_DIR (default build/quickstart) holds their
# state, logs and pid files; EDGESYNC_LISTEN, EDGESYNC_ADMIN_LISTEN and
# EDGESYNC_HTTP_LISTEN move the listeners off their default ports.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${ES_QUICKSTART_DIR:-${root}/build/quickstart}
bin=${root}/build/bin

# ours PROG PID: true when PID is a running edgesync-PROG whose command line
# names this quick start's directory, i.e. the one this script started (a
# pid file left from an earlier boot may name anyone's process by now).
ours() {
    local exe cmd
    [[ ${2} =~ ^[0-9]+$ ]] || return 1
    exe=$(readlink "/proc/${2}/exe" 2>/dev/null) || return 1
    exe=${exe% (deleted)}   # the binary was rebuilt while it ran
    [[ ${exe##*/} == "edgesync-${1}" ]] || return 1
    cmd=$(tr '\0' ' ' <"/proc/${2}/cmdline" 2>/dev/null) || return 1
    [[ ${cmd} == *"${dir}/"* ]]
}

# stop [PROG...]: stops the agent and the controller (or the PROGs named)
# that this script started, by their pid files, and waits until each is gone.
# quiet=1: say nothing about a PROG that has no pid file.
quiet=0
stop() {
    local p pid
    for p in ${@:-agent controller}; do
        if [[ ! -f ${dir}/${p}.pid ]]; then
            [[ ${quiet} == 1 ]] || echo "quickstart: no ${p} to stop (no ${dir}/${p}.pid)"
            continue
        fi
        pid=$(cat "${dir}/${p}.pid")
        if ! ours "${p}" "${pid}"; then
            echo "quickstart: ${dir}/${p}.pid names pid ${pid}, which is no" \
                "edgesync-${p} of this quick start (it has exited): nothing killed," \
                "pid file removed"
            rm -f "${dir}/${p}.pid"
            continue
        fi
        kill -TERM "${pid}"
        for _ in $(seq 100); do
            ours "${p}" "${pid}" || break
            sleep 0.1
        done
        if ours "${p}" "${pid}"; then
            echo "quickstart: the ${p} (pid ${pid}) did not stop within 10 s of SIGTERM" >&2
            return 1
        fi
        # Its /proc/PID/exe goes early in its exit: wait until it has
        # exited (gone, or a zombie for its parent to reap).
        for _ in $(seq 50); do
            [[ -e /proc/${pid} ]] || break
            [[ $(sed 's/.*) //' "/proc/${pid}/stat" 2>/dev/null) == Z* ]] && break
            sleep 0.1
        done
        rm -f "${dir}/${p}.pid"
        echo "quickstart: stopped the ${p} (pid ${pid})"
    done
}

if [[ ${1:-} == stop ]]; then
    shift
    for p in "$@"; do
        if [[ ${p} != agent && ${p} != controller ]]; then
            echo "quickstart: stop [agent] [controller], not \"${p}\"" >&2
            exit 2
        fi
    done
    stop "$@"
    exit
fi

if [[ ${EUID} -eq 0 ]]; then
    bash scripts/install-deps.sh
fi
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "quickstart: built ${bin}/{edgesync-agent,edgesync-controller,edgesyncctl}"

quiet=1 stop
mkdir -p "${dir}"

# The listeners: the defaults, or EDGESYNC_LISTEN, EDGESYNC_ADMIN_LISTEN and
# EDGESYNC_HTTP_LISTEN when set (the programs read the same variables).
listen=${EDGESYNC_LISTEN:-127.0.0.1:7443}
admin=${EDGESYNC_ADMIN_LISTEN:-127.0.0.1:7444}
http=${EDGESYNC_HTTP_LISTEN:-127.0.0.1:9477}
for hp in "${listen}" "${admin}" "${http}"; do
    if (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null; then
        cat >&2 <<MSG
quickstart: ${hp} is already in use, by another edgesync or another program.
Stop it, or choose free addresses, for example:
  EDGESYNC_LISTEN=127.0.0.1:17443 EDGESYNC_ADMIN_LISTEN=127.0.0.1:17444 \\
  EDGESYNC_HTTP_LISTEN=127.0.0.1:19477 ES_QUICKSTART_DIR=/tmp/edgesync-qs $0
MSG
        exit 1
    fi
done

node=$(hostname | cut -d. -f1 | tr '[:upper:]' '[:lower:]')
"${bin}/edgesync-controller" run --dev --state-dir "${dir}/controller" \
    --listen "${listen}" --admin-listen "${admin}" \
    --dev-node "${node}" >"${dir}/controller.log" 2>&1 &
echo $! >"${dir}/controller.pid"

dev=${dir}/controller/dev
ctlconf=${dev}/edgesyncctl.conf
for _ in $(seq 100); do
    [[ -f ${dev}/agent-${node}.conf && -f ${ctlconf} ]] && break
    sleep 0.1
done
if [[ ! -f ${dev}/agent-${node}.conf ]]; then
    echo "quickstart: the controller did not start; its log:" >&2
    tail -20 "${dir}/controller.log" >&2
    exit 1
fi

# The dev config leaves state-dir at the agent's default (/var/lib/edgesync,
# what its systemd unit uses): keep this agent's database here instead.
"${bin}/edgesync-agent" run --config "${dev}/agent-${node}.conf" \
    --state-dir "${dir}/agent" --http-listen "${http}" >"${dir}/agent.log" 2>&1 &
echo $! >"${dir}/agent.pid"

ctl() { "${bin}/edgesyncctl" --config "${ctlconf}" "$@"; }
ok=0
for _ in $(seq 150); do
    if ctl get node "${node}" -o json 2>/dev/null | grep -q '"nodeInfo"'; then
        ok=1
        break
    fi
    for p in controller agent; do
        if ! kill -0 "$(cat "${dir}/${p}.pid")" 2>/dev/null; then
            echo "quickstart: the ${p} stopped; the end of its log:" >&2
            tail -20 "${dir}/${p}.log" >&2
            stop
            exit 1
        fi
    done
    sleep 0.2
done
if [[ ${ok} != 1 ]]; then
    echo "quickstart: the node did not reach the controller in 30 s; logs in ${dir}" >&2
    exit 1
fi

echo
echo "\$ edgesyncctl get nodes"
ctl get nodes
echo
echo "\$ edgesyncctl describe node ${node}"
ctl describe node "${node}"
cat <<MSG

The controller and the agent keep running (logs: ${dir}/*.log).
Keep looking:
  export EDGESYNCCTL_CONFIG=${ctlconf}
  ${bin}/edgesyncctl get nodes -o wide
  ${bin}/edgesyncctl describe node ${node}
  ${bin}/edgesyncctl apply -f ${root}/packaging/examples/collectorconfig.yaml
  curl -s http://${http}/v1/state     # the agent's own view
Stop both: ES_QUICKSTART_DIR=${dir} ${root}/scripts/quickstart.sh stop
(or only the controller, and the agent keeps going offline: ... stop controller)
MSG
