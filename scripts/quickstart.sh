#!/usr/bin/env bash
# quickstart.sh - the README's first command.
#
# Installs what the build needs, builds edgesync, then starts on loopback a
# development controller (`edgesync-controller run --dev`: a throwaway CA
# and certificates in its state directory) and an agent for this host,
# connected over mutual TLS, waits until the controller holds the host's
# real state, and shows it with edgesyncctl. Both keep running in the
# background; `scripts/quickstart.sh stop` stops them.
#
# Environment: ES_QUICKSTART_DIR (default build/quickstart) holds their
# state, logs and pid files.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${ES_QUICKSTART_DIR:-${root}/build/quickstart}
bin=${root}/build/bin

stop() {
    for p in agent controller; do
        if [[ -f ${dir}/${p}.pid ]]; then
            kill "$(cat "${dir}/${p}.pid")" 2>/dev/null || true
            rm -f "${dir}/${p}.pid"
        fi
    done
}

if [[ ${1:-} == stop ]]; then
    stop
    echo "quickstart: stopped the controller and the agent"
    exit 0
fi

if [[ ${EUID} -eq 0 ]]; then
    bash scripts/install-deps.sh
fi
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "quickstart: built ${bin}/{edgesync-agent,edgesync-controller,edgesyncctl}"

stop
mkdir -p "${dir}"
node=$(hostname | cut -d. -f1 | tr '[:upper:]' '[:lower:]')
"${bin}/edgesync-controller" run --dev --state-dir "${dir}/controller" \
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

"${bin}/edgesync-agent" run --config "${dev}/agent-${node}.conf" \
    >"${dir}/agent.log" 2>&1 &
echo $! >"${dir}/agent.pid"

ctl() { "${bin}/edgesyncctl" --config "${ctlconf}" "$@"; }
for _ in $(seq 150); do
    if ctl get node "${node}" -o json 2>/dev/null | grep -q '"nodeInfo"'; then
        break
    fi
    sleep 0.2
done

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
  curl -s http://127.0.0.1:9477/v1/state     # the agent's own view
Stop both: ${root}/scripts/quickstart.sh stop
MSG
