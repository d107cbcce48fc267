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
 * to <state-dir>/pki/node.crt, node.key and ca.crt. token-file, when
 * set, is read first: its first line, blanks around it removed, is the
 * token (giving token too is refused; a missing, unreadable or empty file
 * is a configuration error naming it). Without a token, ca-hash must be
 * empty, join-url (for renewal of an expired certificate, renew.h) is
 * checked when set and else derived as above when controller-url allows,
 * and cert, key and ca take those
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

struct es_http_resp;

/* Reads the small file path (at most ES_PKI_FILE_MAX bytes) whole into
 * *out (malloc'd, NUL-terminated; the caller wipes a secret and frees);
 * *out is NULL when the file does not exist. what names the setting in
 * errors. Errors: ES_ERR_IO (unreadable: err names what and path),
 * ES_ERR_NOMEM. */
es_err es_join_read_pem(const char *what, const char *path, char **out, char *err,
			size_t errsz);

/* Writes data to path atomically (es_pki_write_file_atomic) with mode,
 * making its directory (0700) first; out (may be NULL) gets "wrote
 * PATH". Errors: those of es_fs_mkdir_p and es_pki_write_file_atomic. */
es_err es_join_put(const char *path, const char *data, unsigned mode, FILE *out,
		   char *err, size_t errsz);

/*
 * The join listener's answer r to the request at url for the key whose pin
 * is kpin (what: "join" or "renewal", for messages): a refusal becomes an
 * error (reason, rsz bytes, gets its Status reason when rsz > 0); a 200
 * must hold a certificate for that key and a caBundle, and they are
 * written, each atomically: the bundle to cfg->ca, new_key (when not
 * NULL, mode 0600) to cfg->key, the certificate to cfg->cert. out as for
 * es_join_put. Errors: ES_ERR_AUTH (a 4xx refusal), ES_ERR_IO (a 5xx, an
 * answer without a certificate or for another key, a file not written),
 * ES_ERR_NOMEM.
 */
es_err es_join_answer(const es_agent_config *cfg, const struct es_http_resp *r,
		      const char *url, const char *what, const char *kpin,
		      const char *new_key, FILE *out, char *reason, size_t rsz,
		      char *err, size_t errsz);

/* The Kubernetes Status a join listener refused with: "Reason: message"
 * into buf (sz bytes), and the reason alone into rbuf (rsz bytes; rsz 0:
 * not wanted); "HTTP status N" and "HTTPN" when the body is no Status. */
void es_join_refusal(const struct es_http_resp *r, char *rbuf, size_t rsz, char *buf,
		     size_t sz);

#endif
