/*
 * db_enroll.h - the enrollment part of the controller store (db.h): the
 * bootstrap tokens (kubeadm's shape: the id in the clear, only the SHA-256
 * of the secret), the certificates the signing CA issued (serial, node,
 * the subject key's pin, notAfter, revoked), and the key each enrolled
 * node name is bound to. Same transactions and thread rules as db.h.
 */
#ifndef ES_CTRL_DB_ENROLL_H
#define ES_CTRL_DB_ENROLL_H

#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "store/db.h"

/* A token as stored. */
typedef struct es_db_token {
	const char *id;            /* 6 of [a-z0-9] */
	const char *secret_sha256; /* hex SHA-256 of the secret */
	time_t expires;            /* Unix seconds */
	int64_t usages;            /* nodes that may join with it, >= 1 */
	const cJSON *labels;       /* object of string labels the nodes get */
	const char *name_prefix;   /* node names must start with it ("" any) */
	time_t created;
} es_db_token;

/* Stores a new token. Errors: ES_ERR_EXISTS (the id is taken), ES_ERR_DB,
 * ES_ERR_NOMEM. */
es_err es_db_token_create(es_db *db, const es_db_token *t);

/* Every token, ordered by id, as a new array of
 * {id, expires (RFC 3339), usages, used, labels, namePrefix,
 * creationTimestamp}: never the secret or its hash. */
es_err es_db_token_list(es_db *db, cJSON **out);

/* Deletes a token. Errors: ES_ERR_NOTFOUND, ES_ERR_DB. */
es_err es_db_token_delete(es_db *db, const char *id);

/* Why a join was refused (es_db_join). */
typedef enum es_db_join_result {
	ES_DB_JOIN_OK = 0,
	ES_DB_JOIN_TOKEN_UNKNOWN = 1, /* no such id, or the secret differs */
	ES_DB_JOIN_TOKEN_EXPIRED = 2,
	ES_DB_JOIN_TOKEN_USED_UP = 3,
	ES_DB_JOIN_NAME_PREFIX = 4,   /* the name is outside the token's prefix */
	ES_DB_JOIN_NAME_TAKEN = 5,    /* enrolled already with another key */
} es_db_join_result;

/* A join to record: the token presented, the node and its new certificate. */
typedef struct es_db_join {
	const char *token_id, *secret_sha256;
	const char *node;
	const char *key_pin;     /* pin of the node's public key */
	const char *serial;      /* the issued certificate's */
	time_t not_after;
} es_db_join;

/*
 * Checks and records a join in one transaction: the token exists and its
 * secret hash matches (compared in constant time), it has not expired at
 * now, it has usages left, the node name starts with its prefix, and the
 * name is not enrolled with another key (the same key may join again,
 * e.g. after its certificate lapsed). Then: the token's use is counted,
 * the node's enrollment (key, token, the token's labels) and the
 * certificate are recorded. *result says which check failed (nothing is
 * written then); *labels (may be NULL) gets a copy of the token's labels
 * on ES_DB_JOIN_OK. Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_db_join_record(es_db *db, const es_db_join *j, time_t now,
			 es_db_join_result *result, cJSON **labels);

/* Records a certificate issued to a node outside a join (a renewal).
 * Errors: ES_ERR_DB. */
es_err es_db_cert_record(es_db *db, const char *serial, const char *node,
			 const char *key_pin, time_t not_after, time_t now);

/* Why a renewal with an expired certificate was refused (es_db_renew_record). */
typedef enum es_db_renew_result {
	ES_DB_RENEW_OK = 0,
	ES_DB_RENEW_NOT_ISSUED = 1,   /* the serial was not issued to that node */
	ES_DB_RENEW_REVOKED = 2,      /* revoked, or the node is not enrolled */
	ES_DB_RENEW_KEY_MISMATCH = 3, /* issued for another key */
} es_db_renew_result;

/* A renewal to record: the certificate presented and its successor. */
typedef struct es_db_renew {
	const char *node;
	const char *old_serial;  /* lower-case hex, as presented */
	const char *key_pin;     /* pin of the presented (and the new) key */
	const char *serial;      /* the new certificate's */
	time_t not_after;        /* the new certificate's */
} es_db_renew;

/*
 * Checks and records a renewal in one transaction (PROTOCOL.md "Renewal of
 * an expired certificate"): old_serial was issued by the signing CA to
 * node for key_pin and is not revoked, and node is enrolled with that key.
 * Then the new certificate is recorded. *result says which check failed
 * (nothing is written then). Errors: ES_ERR_DB.
 */
es_err es_db_renew_record(es_db *db, const es_db_renew *r, time_t now,
			  es_db_renew_result *result);

/* What the store knows about a certificate serial (es_db_cert_state). */
typedef enum es_db_cert_status {
	ES_DB_CERT_UNKNOWN = 0, /* not issued by the signing CA */
	ES_DB_CERT_VALID = 1,   /* issued to the node, not revoked */
	ES_DB_CERT_REVOKED = 2, /* revoked, or issued to another node */
} es_db_cert_status;

/* The state of serial (lower-case hex) for node. Errors: ES_ERR_DB. */
es_err es_db_cert_state(es_db *db, const char *serial, const char *node,
			es_db_cert_status *out);

/*
 * A renewal over the session (PROTOCOL.md "Renewal"), in one transaction
 * that first commits an open report batch: when old_serial (the session's
 * certificate) is ES_DB_CERT_VALID for node, records the new certificate
 * (serial, key_pin, not_after) and binds the node's enrollment to key_pin
 * (a new key replaces the old one, so that a join with the old key is
 * NameTaken from then on). *was gets old_serial's state; nothing is
 * written unless it is ES_DB_CERT_VALID. Errors: ES_ERR_DB.
 */
es_err es_db_cert_renew(es_db *db, const char *node, const char *old_serial,
			const char *serial, const char *key_pin, time_t not_after,
			time_t now, es_db_cert_status *was);

/*
 * Revokes a node: its certificates are marked revoked, its enrollment (the
 * key its name is bound to) is removed so that the name can join again
 * with a new token, and extra_serial (may be NULL: the serial of a session
 * open now, which may come from another CA) is recorded revoked too.
 * *count gets the certificates revoked. Errors: ES_ERR_DB.
 */
es_err es_db_node_revoke(es_db *db, const char *node, const char *extra_serial,
			 time_t now, int64_t *count);

/* The labels the node's enrollment gave it, a new object (an empty one when
 * the node did not join with a token). Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_db_enroll_labels(es_db *db, const char *node, cJSON **out);

/* ---- the mirror of enrollment on an etcd store (store_etcd_enroll.h) ----
 * With store = etcd the tables above are a copy of etcd's records, fed by
 * watches and written by nothing else; the reads above work on it as on a
 * SQLite store. Each call is its own transaction. Errors: ES_ERR_DB,
 * ES_ERR_NOMEM. */

/* Empties the tokens, certificates and enrollments (before a full list). */
es_err es_db_enroll_mirror_clear(es_db *db);
/* Creates or replaces a token with its use count. */
es_err es_db_enroll_mirror_token(es_db *db, const es_db_token *t, int64_t used);
/* Removes a token (none: no error). */
es_err es_db_enroll_mirror_token_delete(es_db *db, const char *id);
/* Records a certificate; a revocation recorded before stays. */
es_err es_db_enroll_mirror_cert(es_db *db, const char *serial, const char *node,
				const char *key_pin, time_t not_after, time_t issued);
/* Marks serial revoked (recorded for node when it was unknown). */
es_err es_db_enroll_mirror_revoked(es_db *db, const char *serial, const char *node,
				   time_t when);
/* Creates or replaces node's enrollment (labels borrowed, NULL: none). */
es_err es_db_enroll_mirror_node(es_db *db, const char *node, const char *key_pin,
				const char *token_id, const cJSON *labels,
				time_t enrolled);
/* Removes node's enrollment (none: no error). */
es_err es_db_enroll_mirror_node_delete(es_db *db, const char *node);

#endif
