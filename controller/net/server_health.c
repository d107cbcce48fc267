/*
 * server_health.c - whether this controller can serve (the join
 * listener's /readyz, README "Kubernetes"), fed by the etcd client's
 * observer.
 */
#include "net/server_int.h"

#include <stdio.h>
#include <string.h>

#include "store/store_etcd.h"

void es_server_etcd_observed(void *ud, const char *op, es_err rc, int reached,
			     double seconds)
{
	es_server *s = ud;

	if (!s)
		return;
	s->etcd_up = reached;
	es_ctrl_metrics_etcd(s->metrics, op, rc == ES_OK, reached, seconds);
}

int server__ready(const es_server *s, char *why, size_t whysz)
{
	if (s->stop) {
		snprintf(why, whysz, "the controller is stopping");
		return 0;
	}
	if (!s->store || strcmp(es_store_backend(s->store), "etcd") != 0)
		return 1;
	if (!s->etcd_up) {
		snprintf(why, whysz, "etcd does not answer");
		return 0;
	}
	if (!es_store_etcd_synced(s->store)) {
		snprintf(why, whysz, "the mirror of etcd's objects has not caught up yet");
		return 0;
	}
	if (!es_store_etcd_leased(s->store)) {
		snprintf(why, whysz, "no etcd lease for node sessions yet");
		return 0;
	}
	return 1;
}
