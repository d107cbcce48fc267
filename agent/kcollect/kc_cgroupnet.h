/*
 * kc_cgroupnet.h - the cgroup network collector's Prometheus families
 * (agent/kcollect/kc_cgroupnet.c; the collector itself is
 * es_kc_cgroupnet_ops in kcollect.h). cAdvisor's names and label (its
 * documented Prometheus metrics, "Monitoring cAdvisor with Prometheus"):
 * container_network_{receive,transmit}_{bytes,packets}_total{id}, id = the
 * cgroup's path from the cgroup v2 root ("/" for the root,
 * "/system.slice/ssh.service"). Unlike cAdvisor, which reads a container's
 * network interfaces, the figures are the IP packets (headers included)
 * that the cgroup's sockets sent and received, counted by the cgroup_skb
 * hooks since the collector started; a cgroup whose path is unknown
 * (removed) is left out.
 */
#ifndef ES_AGENT_KC_CGROUPNET_H
#define ES_AGENT_KC_CGROUPNET_H

#include <stddef.h>
#include "es_err.h"
#include "es_metrics.h"
#include "kcollect/kcollect.h"

typedef struct es_kc_cgroupnet_metrics {
	es_metric *rx_bytes, *rx_packets, *tx_bytes, *tx_packets; /* owned by the registry */
} es_kc_cgroupnet_metrics;

/*
 * Registers the four counter families in reg into m (m's pointers are
 * borrowed from reg). Errors: what es_metrics_counter returns
 * (ES_ERR_EXISTS when already registered, ES_ERR_NOMEM), err says which.
 */
es_err es_kc_cgroupnet_metrics_add(es_metrics *reg, es_kc_cgroupnet_metrics *m,
				   char *err, size_t errsz);

/*
 * Refills m's families from the cgroup-network collector of set (called
 * from an es_metrics_on_render function): every series is removed, then
 * one per cgroup in the collector's map. set NULL, or the collector not
 * running (disabled, unavailable): the families stay empty and are left out
 * of the output. Errors: ES_ERR_NOMEM (m partly filled).
 */
es_err es_kc_cgroupnet_metrics_set(const es_kc_cgroupnet_metrics *m,
				   es_kcollectors *set);

#endif
