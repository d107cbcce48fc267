/*
 * check.h - `edgesync-agent check`: probes what this host offers the agent
 * (README, "What each program does") and prints a table
 * CHECK / RESULT / DETAIL.
 */
#ifndef ES_AGENT_CHECK_H
#define ES_AGENT_CHECK_H

#include <stdio.h>
#include "runtime/config.h"

/*
 * Runs every probe against the real host and prints the table to out, with
 * the settings of cfg (validated; borrowed) that change the outcome:
 * collector-backend, ringbuf-bytes and cgroup-root.
 * Probes: procfs (/proc/stat, /proc/meminfo), sysfs, os-release, the bpf()
 * syscall (creating an array map), BPF ring buffers (a ringbuf map), BTF
 * (/sys/kernel/btf/vmlinux), tracefs (with the probe of `run`, which
 * mounts it when missing: check mounts it the same way, in a private mount
 * namespace, and says so), cgroup v2 mounted, the backend of each
 * collector, and, when controller-url is set, each credential file (cert,
 * key, ca: ok, missing or invalid with the reason, es_pki_creds_check).
 * Returns 0 when the agent can run here (procfs readable) and connect
 * (its credential files usable), else 1.
 */
int es_check_run(FILE *out, const es_agent_config *cfg);

#endif
