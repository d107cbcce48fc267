/*
 * join.h - an agent joins its controller with a bootstrap token (README,
 * "Joining nodes"; PROTOCOL.md, "Joining"), as kubeadm's discovery with a
 * pinned CA hash: the key is made here and never leaves the node, the
 * controller's CA is fetched without trusting it and compared with the
 * pin before the token is sent, then a PKCS#10 request goes to the join
 * listener over TLS verified against that CA, and the certificate and CA
 * bundle are written into the state directory.
 */
#ifndef ES_AGENT_JOIN_H
#define ES_AGENT_JOIN_H

#include <stdio.h>
#include "es_err.h"
#include "runtime/config.h"

/* Where a joined node keeps its credentials, below state-dir. */
#define ES_JOIN_PKI_DIR "pki"

/*
 * The join settings' part of es_agent_config_validate: with a token, the
 * shape of token ("<id>.<secret>", 6 and 16 of [a-z0-9]) and ca-hash
 * ("sha256:" + 64 hex digits, lower-cased in place) are checked,
 * controller-url is required, join-url defaults to https://<host>:<port +
 * ES_ENROLL_JOIN_PORT_OFFSET> of controller-url's first URL (a list's
 * first), and cert, key and ca default
 * to <state-dir>/pki/node.crt, node.key and ca.crt. Without a token,
 * ca-hash and join-url must be empty, and cert, key and ca take those
 * defaults too when none of them is set and <state-dir>/pki/node.crt
 * exists (a node that joined, run without its token). Errors: ES_ERR_INVAL naming the
 * setting (never quoting the token's secret), ES_ERR_NOMEM.
 */
es_err es_join_config_finish(es_agent_config *cfg, char *err, size_t errsz);

/* 1 when cfg has a token and no usable certificate yet: cert missing, or
 * es_pki_creds_check finds the files bad (so `run` joins first). */
int es_join_needed(const es_agent_config *cfg);

/*
 * Joins (cfg validated, with a token): reuses the key at cfg->key when
 * there is one (a node that lost its certificate keeps its identity's
 * key), else makes a P-256 key; writes, each atomically, ca (0644), key
 * (0600, only when new) and cert (0644), and only after the controller
 * answered with a certificate for that key, so a refusal writes nothing.
 * out (may be NULL) gets one line per file written.
 * Errors (err says which and why):
 *   ES_ERR_AUTH   the CA offered does not match ca-hash, or the controller
 *                 refused the join (the token unknown, expired or used up,
 *                 the name outside its prefix or taken by another key)
 *   ES_ERR_INVAL  a bad setting, or a key file that is not a key
 *   ES_ERR_IO, ES_ERR_TLS  the controller cannot be reached or spoke
 *                 nonsense; a file could not be written
 *   ES_ERR_NOMEM
 */
es_err es_join_run(const es_agent_config *cfg, FILE *out, char *err, size_t errsz);

#endif
