/*
 * wait.h - `edgesyncctl apply --wait`: waits until the nodes that the
 * applied objects select have acknowledged them, through the admin API's
 * waiting node GET (GET .../nodes/NAME?waitForDesiredResourceVersion=N
 * &timeoutSeconds=T, controller/net/server_wait.c).
 */
#ifndef ES_CTL_WAIT_H
#define ES_CTL_WAIT_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "ctl.h"
#include "tokens.h" /* es_ctl_api */

/* The longest one waiting request may ask the controller to wait, in
 * seconds (its timeoutSeconds bound: controller/net/server_int.h);
 * longer waits are asked for again. */
#define ES_CTL_WAIT_MAX_S 600

/*
 * applied: a JSON array of the objects as the controller answered their
 * apply (metadata.resourceVersion, spec.nodeSelector; borrowed). Lists the
 * nodes; for each one some object selects (es_obj_selects on its
 * metadata.labels) and that is connected (status.sync.connected), waits
 * until its agent holds the highest of those objects' resourceVersions, at
 * most until timeout_ms (milliseconds, for all nodes together, counted in
 * the controller's whole seconds) has passed. api's client must wait for
 * a response at least min(timeout_ms, ES_CTL_WAIT_MAX_S s) and some.
 * Prints one line per selected node to out ("node/NAME acknowledged
 * resourceVersion N", "... not connected: ...", "... not waited for:
 * <the controller's reason>", a server error on stderr for a timeout) and a
 * summary line ("no node has labels ..." before it when none is
 * selected). A node not connected when listed, or served by another
 * controller (store = etcd), is reported and not waited for; one whose
 * session closes after it was listed is waited for until it connects
 * again or the time is up.
 * Returns ES_CTL_EXIT_OK when every node waited for acknowledged, else
 * ES_CTL_EXIT_RUNTIME (a timeout, a request that failed or was refused,
 * printed).
 */
int es_ctl_wait_applied(const es_ctl_api *api, const cJSON *applied,
			int64_t timeout_ms, FILE *out);

#endif
