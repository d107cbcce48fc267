/*
 * agent_int.h - what agent.c (the runtime: event loop, rounds, hooks) and
 * agent_node.c (the Node object and its conditions) share inside the agent
 * module; not for other modules (they use agent.h).
 */
#ifndef ES_AGENT_AGENT_INT_H
#define ES_AGENT_AGENT_INT_H

#include <time.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "agent.h"
#include "collect.h"
#include "es_obj.h"
#include "httpd.h"
#include "store.h"
#include "sync.h"

struct es_agent {
	const es_agent_config *cfg;
	struct lws_context *ctx;
	es_store *st;
	es_collect *col;
	es_sync *sync;
	es_httpd *httpd;
	lws_sorted_usec_list_t sul_collect;
	cJSON *labels;
	cJSON *conditions;  /* node conditions, kept across rounds */
	cJSON *node;        /* the latest Node object */
	es_collector_cfg eff;
	int has_cc;         /* a CollectorConfig is cached */
	int ready;          /* the first round is done */
	int have_mem;
	double mem_available;
};

/* agent.c */

/* Queues the event ev in the outbox; consumes ev (NULL is ignored). */
void agent__queue_event(es_agent *a, cJSON *ev);

/* agent_node.c */

/* Updates a->conditions; queues ConditionChanged events for conditions
 * that existed before and changed status. */
void agent__update_conditions(es_agent *a, const cJSON *status, time_t now);
/* Builds the Node object around one round's status (consumed). */
cJSON *agent__build_node(es_agent *a, cJSON *status);
/* Seeds the node conditions from the newest stored state so that
 * lastTransitionTime survives restarts. */
void agent__seed_conditions(es_agent *a);

#endif
