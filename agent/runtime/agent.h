/*
 * agent.h - the edgesync agent runtime (docs/ARCHITECTURE.md, "Data flow"):
 * one libwebsockets context and one thread owning the store, the
 * collectors, the sync client and the local HTTP endpoint.
 *
 * Each collection round builds the Node object (PROTOCOL.md "Node"), with
 * node conditions following kubelet's eviction thresholds, queues it in
 * the outbox (latest wins while unsent) and tells the sync client. Desired
 * objects are reconciled at start (from the cache: the agent keeps
 * enforcing offline) and whenever the controller sends new ones.
 */
#ifndef ES_AGENT_AGENT_H
#define ES_AGENT_AGENT_H

#include <signal.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "runtime/config.h"
#include "es_err.h"

typedef struct es_agent es_agent;

/* MemoryPressure when MemAvailable is below this (kubelet's default
 * hard eviction threshold memory.available<100Mi). */
#define ES_AGENT_MEM_PRESSURE_BYTES (100.0 * 1024 * 1024)
/* DiskPressure when the root filesystem has less than this fraction
 * available (kubelet's nodefs.available<10%). */
#define ES_AGENT_DISK_PRESSURE_FRACTION 0.10
/* PIDPressure when processes exceed this fraction of kernel.pid_max. */
#define ES_AGENT_PID_PRESSURE_FRACTION 0.90
/* The node condition about the sync client's credential files (cert,
 * key, ca): PROTOCOL.md "Node", built-in conditions. */
#define ES_AGENT_COND_CREDENTIALS "CredentialsValid"
/* The node condition about the node certificate's validity and its
 * renewal (PROTOCOL.md "Node", "Renewal of an expired certificate"). */
#define ES_AGENT_COND_CERTIFICATE "CertificateValid"
/* Descriptors the agent's event loop watches at most: the sync connection,
 * the local endpoint's listeners, the kernel collectors' ring buffers and
 * local HTTP clients (a client past the bound is refused). */
#define ES_AGENT_LWS_FDS 128

/*
 * Builds the agent from a validated configuration (borrowed: it must outlive
 * the agent): creates state-dir (mode 0700) and opens state-dir/agent.db
 * (es_store_open_repair: a damaged file is moved aside and replaced),
 * the lws context, the HTTP endpoint (unless http-listen is "") and the sync
 * client (unless controller-url is "").
 * Unusable credential files are not an error: the agent runs offline and
 * says why (sync.h, es_sync_new; the node condition CredentialsValid).
 * Errors: ES_ERR_INVAL (a configuration problem: bad labels, a bad
 * controller-url; err names the key), ES_ERR_IO (state-dir cannot be
 * created, the HTTP address cannot be bound), ES_ERR_DB /
 * ES_ERR_UNSUPPORTED (the database, see store.h), ES_ERR_NOMEM.
 */
es_err es_agent_new(const es_agent_config *cfg, es_agent **out, char *err,
		    size_t errsz);

/*
 * Reconciles the cached desired objects, collects the first round, dials
 * the controller and serves the event loop until *stop becomes non-zero
 * (set from a signal handler). Errors: ES_ERR_IO when the event loop fails.
 */
es_err es_agent_run(es_agent *a, volatile sig_atomic_t *stop);

/* Stops everything and closes the store. NULL-safe. */
void es_agent_free(es_agent *a);

/* The /v1/state document {node, desired, sync} as a new tree into *out
 * (NULL on error). Errors: ES_ERR_DB (the store cannot be read;
 * es_store_health_get says why), ES_ERR_NOMEM. */
es_err es_agent_state_json(es_agent *a, cJSON **out);

#endif
