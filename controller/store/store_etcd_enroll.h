/*
 * store_etcd_enroll.h - joining on an etcd store (store_enroll.h), shared
 * by every controller of the etcd (docs/ARCHITECTURE.md, "The store").
 *
 * Records (JSON values; times Unix seconds):
 *   <prefix>tokens/<id>            {secretSha256, expires, usages, used,
 *                                   labels, namePrefix, created}
 *   <prefix>enrollments/<node>     {keyPin, tokenId, labels, enrolled}:
 *                                   the key the node name is bound to
 *   <prefix>certs/<node>/<serial>  {keyPin, notAfter, issued}: a
 *                                   certificate the signing CA issued
 *   <prefix>revoked/<node>         {serials: [..], revoked}: the serials
 *                                   revoked by deleting the node
 *
 * Every call reads the records its rules look at (one txn of ranges),
 * decides by the rules of db_enroll.h (es_store_etcd_enroll_decide), then
 * writes in one txn that compares each record's mod_revision with the one
 * read (0: absent) and reads them again when one changed; it then decides
 * again from what it read (at most ES_STORE_ETCD_ATTEMPTS times:
 * ES_ERR_CONFLICT). So two controllers cannot both take a token's last
 * use, and a revocation and a renewal of one node are ordered: both write
 * or compare the enrollment record. A write whose outcome is unknown is
 * settled by reading again: the new certificate's key (a fresh serial) or
 * token (a fresh secret) says whether it was applied.
 *
 * The db_enroll.h tables are this controller's copy: listed at the start
 * (one txn, one revision), then fed by a watch of each prefix; a write of
 * this controller is put into them as soon as it committed, so a read
 * after the answer sees it. A revocation (a change of revoked/<node>) is
 * told to the es_store_on_revoked function once the copy holds it.
 */
#ifndef ES_CTRL_STORE_ETCD_ENROLL_H
#define ES_CTRL_STORE_ETCD_ENROLL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "etcd/etcd_msg.h"
#include "es_err.h"
#include "store/store_enroll.h"

/* The records (key indexes of es_store_etcd_enroll_req.key). */
typedef enum es_enr_rec {
	ES_ENR_TOKEN = 0,    /* tokens/<id> */
	ES_ENR_NODE = 1,     /* enrollments/<node> */
	ES_ENR_CERT = 2,     /* certs/<node>/<serial>: the new certificate */
	ES_ENR_OLD_CERT = 3, /* certs/<node>/<old_serial> */
	ES_ENR_REVOKED = 4,  /* revoked/<node> */
	ES_ENR_CERTS = 5,    /* certs/<node>/ (a range: revoke) */
	ES_ENR_N = 6
} es_enr_rec;

typedef enum es_enr_op {
	ES_ENR_OP_TOKEN_CREATE = 0,
	ES_ENR_OP_TOKEN_DELETE,
	ES_ENR_OP_JOIN,
	ES_ENR_OP_RENEW,      /* es_db_renew_record */
	ES_ENR_OP_CERT_RENEW, /* es_db_cert_renew */
	ES_ENR_OP_REVOKE,
} es_enr_op;

/* One call: its inputs (owned strings, "" when unused) and keys. */
typedef struct es_store_etcd_enroll_req {
	es_enr_op op;
	char *node, *token_id, *secret_sha256, *key_pin, *serial, *old_serial, *extra;
	int64_t not_after, now;
	cJSON *token;          /* token create: the record to put */
	char *key[ES_ENR_N];   /* NULL: not used by op */
	char certs_end[512];   /* range end of key[ES_ENR_CERTS] */
	size_t certs_end_len;
} es_store_etcd_enroll_req;

/* What the last read found. */
typedef struct es_store_etcd_enroll_reads {
	cJSON *rec[ES_ENR_N];  /* the record, NULL: absent (ES_ENR_CERTS: unused) */
	int64_t mod[ES_ENR_N]; /* its mod_revision, 0: absent */
	cJSON *certs;          /* ES_ENR_CERTS: array of the node's serials */
} es_store_etcd_enroll_reads;

/* Most writes of one call. */
#define ES_ENR_MAX_WRITES 4

/* The write txn of a call: compare, then put (value) or delete (NULL). */
typedef struct es_store_etcd_enroll_plan {
	size_t n_cmp;
	const char *cmp_key[ES_ENR_N]; /* borrowed from the req */
	int64_t cmp_mod[ES_ENR_N];
	size_t n_w;
	const char *w_key[ES_ENR_MAX_WRITES]; /* borrowed from the req */
	char *w_value[ES_ENR_MAX_WRITES];     /* owned; NULL: delete */
} es_store_etcd_enroll_plan;

/*
 * Parses a record's value (rec ES_ENR_TOKEN, ES_ENR_NODE, ES_ENR_CERT or
 * ES_ENR_REVOKED; the shapes of the header comment, extra members
 * ignored) into *out (caller owns). Errors: ES_ERR_PROTO (not JSON, or a
 * member missing or of the wrong type: err names it), ES_ERR_NOMEM.
 */
es_err es_store_etcd_enroll_parse(es_enr_rec rec, const char *value, size_t len,
				  cJSON **out, char *err, size_t errsz);

/* The token record of t with used uses, a new object; NULL: no memory. */
cJSON *es_store_etcd_enroll_token_rec(const es_db_token *t, int64_t used);

/*
 * Fills r->key[] for r->op, r->node, r->token_id, r->serial, r->old_serial
 * under prefix (ending in '/'). Errors: ES_ERR_INVAL (a key over 500
 * bytes), ES_ERR_NOMEM.
 */
es_err es_store_etcd_enroll_keys(es_store_etcd_enroll_req *r, const char *prefix);

/*
 * Decides r on what rd holds, by db_enroll.h's rules. *write 0: done,
 * res->rc/outcome/count/labels (labels borrowed from rd) are the answer;
 * 1: out is the txn to send (compares of every record rd read, with its
 * mod_revision). Errors: ES_ERR_NOMEM (out then freed).
 */
es_err es_store_etcd_enroll_decide(const es_store_etcd_enroll_req *r,
				   const es_store_etcd_enroll_reads *rd, int *write,
				   es_store_enroll_result *res,
				   es_store_etcd_enroll_plan *out);

/* Adds the ranges of every record r->op reads, to the success (on_success
 * 1) or failure branch of t, in es_enr_rec order. */
es_err es_store_etcd_enroll_reads_add(const es_store_etcd_enroll_req *r,
				      es_etcd_txn *t, int on_success);

/* The write txn of p into t (initialised): compares, the writes on
 * success, r's reads on failure. Errors: ES_ERR_NOMEM. */
es_err es_store_etcd_enroll_plan_txn(const es_store_etcd_enroll_req *r,
				     const es_store_etcd_enroll_plan *p, es_etcd_txn *t);

/* Frees what p and r own and zeroes them. NULL-safe. */
void es_store_etcd_enroll_plan_free(es_store_etcd_enroll_plan *p);
void es_store_etcd_enroll_req_free(es_store_etcd_enroll_req *r);
void es_store_etcd_enroll_reads_free(es_store_etcd_enroll_reads *rd);

#endif
