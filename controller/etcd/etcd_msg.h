/*
 * etcd_msg.h - the bodies of etcd's v3 JSON gateway: building requests and
 * parsing responses, without any I/O (the transport is etcd_client.h).
 *
 * The gateway maps etcd's gRPC messages (etcd's api/etcdserverpb/rpc.proto)
 * to JSON by the proto3 JSON mapping: bytes fields (keys, values) are
 * base64 (RFC 4648 section 4, with padding), 64-bit integers are JSON
 * strings, and a field at its zero value (0, false, empty) is left out, so
 * every absent number here reads as 0 and every absent flag as false.
 * A streamed response (watch) is one JSON object per line, each wrapped as
 * {"result": {...}} or {"error": {...}}.
 *
 * Keys and values are byte strings (a pointer and a length); the parsed
 * copies are also NUL-terminated for convenience.
 */
#ifndef ES_ETCD_MSG_H
#define ES_ETCD_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "es_buf.h"
#include "es_err.h"

/* gRPC status codes etcd answers with (the "code" of an error body). */
enum {
	ES_ETCD_CODE_OK = 0,
	ES_ETCD_CODE_INVALID_ARGUMENT = 3,
	ES_ETCD_CODE_DEADLINE_EXCEEDED = 4,
	ES_ETCD_CODE_NOT_FOUND = 5,
	ES_ETCD_CODE_PERMISSION_DENIED = 7,
	ES_ETCD_CODE_FAILED_PRECONDITION = 9,
	ES_ETCD_CODE_OUT_OF_RANGE = 11, /* "required revision has been compacted" */
	ES_ETCD_CODE_UNAVAILABLE = 14,
	ES_ETCD_CODE_UNAUTHENTICATED = 16,
};

/* One key-value pair (mvccpb.KeyValue). */
typedef struct es_etcd_kv {
	char *key;    /* decoded bytes plus a NUL; owned */
	size_t key_len;
	char *value;  /* decoded bytes plus a NUL ("" when absent); owned */
	size_t value_len;
	int64_t create_revision; /* revision of the put that created the key */
	int64_t mod_revision;    /* revision of its last change */
	int64_t version;         /* puts since creation, 1 for a new key */
	int64_t lease;           /* lease ID, 0 for none */
} es_etcd_kv;

/* What a unary call answered. The fields a call does not fill stay 0. */
typedef struct es_etcd_resp {
	int64_t revision;   /* header.revision: the store's revision then */
	int64_t raft_term;  /* header.raft_term */
	uint64_t member_id; /* header.member_id: the member that answered */
	es_etcd_kv *kvs;    /* range (and a txn's range ops, in ops[]) */
	size_t n_kvs;
	int64_t count;      /* range: keys in the range (not only those sent) */
	int more;           /* range: 1 when limit cut the answer */
	int64_t deleted;    /* deleterange: keys deleted */
	es_etcd_kv *prev_kvs; /* deleterange with prev_kv, put with prev_kv */
	size_t n_prev_kvs;
	int succeeded;      /* txn: 1 when every compare held (success ops ran) */
	struct es_etcd_resp *ops; /* txn: one response per op of the branch run */
	size_t n_ops;
	int64_t lease_id;   /* lease grant / keepalive: the lease ID */
	int64_t ttl;        /* lease grant / keepalive: seconds left; 0 after expiry */
} es_etcd_resp;

typedef enum es_etcd_ev_type {
	ES_ETCD_EV_PUT = 0,
	ES_ETCD_EV_DELETE = 1,
} es_etcd_ev_type;

typedef struct es_etcd_event {
	es_etcd_ev_type type;
	es_etcd_kv kv;      /* for a delete: key and mod_revision (the delete's) */
	int has_prev;       /* 1 when prev_kv was asked for and etcd had it */
	es_etcd_kv prev_kv;
} es_etcd_event;

/* One message of a watch stream (etcdserverpb.WatchResponse). */
typedef struct es_etcd_watch_msg {
	int64_t revision;          /* header.revision */
	int64_t watch_id;
	int created;               /* the watch was set up */
	int canceled;              /* the watch ended (see compact_revision) */
	int64_t compact_revision;  /* >0: canceled because start_revision was
	                            * compacted; the oldest revision kept */
	char cancel_reason[256];
	es_etcd_event *events;     /* in revision order; owned */
	size_t n_events;
} es_etcd_watch_msg;

/* What a comparison of a txn looks at (etcdserverpb.Compare.CompareTarget). */
typedef enum es_etcd_target {
	ES_ETCD_CMP_VERSION = 0,
	ES_ETCD_CMP_CREATE = 1, /* create_revision: 0 means the key is absent */
	ES_ETCD_CMP_MOD = 2,
	ES_ETCD_CMP_VALUE = 3,
	ES_ETCD_CMP_LEASE = 4,
} es_etcd_target;

typedef enum es_etcd_cmp_op {
	ES_ETCD_EQUAL = 0,
	ES_ETCD_GREATER = 1,
	ES_ETCD_LESS = 2,
	ES_ETCD_NOT_EQUAL = 3,
} es_etcd_cmp_op;

/*
 * A transaction being built (etcdserverpb.TxnRequest): compares, then the
 * ops run when all hold (success) or when one does not (failure). Errors
 * are sticky: a failed add leaves the body as it was and keeps its code in
 * err, which every later add returns and es_etcd_msg_txn_body reports, so
 * a caller may add many pieces and check once.
 * A zeroed es_etcd_txn is not usable: start with es_etcd_txn_init.
 */
typedef struct es_etcd_txn {
	cJSON *body;
	cJSON *compare, *success, *failure; /* borrowed from body */
	es_err err;
	size_t n_ops;
	size_t n_writes; /* of n_ops, the puts and deletes (0: a read-only txn) */
} es_etcd_txn;

/* Starts an empty txn. Errors: ES_ERR_NOMEM (t is then freeable). */
es_err es_etcd_txn_init(es_etcd_txn *t);
/* Frees what t holds. NULL-safe; t may be initialised again. */
void es_etcd_txn_free(es_etcd_txn *t);
/*
 * Adds the compare `target(key) op n` (n for VERSION, CREATE, MOD, LEASE)
 * or `value(key) op value` (VALUE; value of vlen bytes, n ignored).
 * Errors: ES_ERR_NOMEM, ES_ERR_INVAL (key NULL or empty, target or op out
 * of range), or the sticky error.
 */
es_err es_etcd_txn_compare(es_etcd_txn *t, const void *key, size_t klen,
			   es_etcd_target target, es_etcd_cmp_op op, int64_t n,
			   const void *value, size_t vlen);
/*
 * Adds a put of key=value (lease 0: none) to the success branch
 * (on_success 1) or the failure branch (0). etcd refuses a txn that
 * touches one key twice in one branch. Errors as es_etcd_txn_compare.
 */
es_err es_etcd_txn_put(es_etcd_txn *t, int on_success, const void *key,
		       size_t klen, const void *value, size_t vlen, int64_t lease);
/* Adds a delete of [key, range_end) (range_end NULL: key alone). */
es_err es_etcd_txn_delete(es_etcd_txn *t, int on_success, const void *key,
			  size_t klen, const void *range_end, size_t relen);
/* Adds a range read of [key, range_end) (range_end NULL: key alone). */
es_err es_etcd_txn_range(es_etcd_txn *t, int on_success, const void *key,
			 size_t klen, const void *range_end, size_t relen);

/*
 * Request bodies. Each returns a new NUL-terminated JSON text the caller
 * frees with free(), or NULL when memory ran out (or, for the txn, when t
 * holds a sticky error: es_etcd_msg_txn_body sets *rc).
 * range_end NULL means the single key; a range_end of one NUL byte (relen
 * 1) means every key >= key. revision 0: the latest; limit 0: no limit.
 * ttl_s: the lease's time to live in seconds; id 0: etcd picks the ID.
 */
char *es_etcd_msg_range(const void *key, size_t klen, const void *range_end,
			size_t relen, int64_t revision, int64_t limit);
char *es_etcd_msg_put(const void *key, size_t klen, const void *value,
		      size_t vlen, int64_t lease);
char *es_etcd_msg_delete(const void *key, size_t klen, const void *range_end,
			 size_t relen);
char *es_etcd_msg_txn_body(const es_etcd_txn *t, es_err *rc);
char *es_etcd_msg_lease_grant(int64_t ttl_s, int64_t id);
char *es_etcd_msg_lease_id(int64_t id); /* keepalive and revoke: {"ID": id} */
/* A watch's create_request from start_revision (0: from now), with
 * progress_notify and prev_kv set. */
char *es_etcd_msg_watch_create(const void *key, size_t klen,
			       const void *range_end, size_t relen,
			       int64_t start_revision);

/*
 * The range_end that covers every key starting with prefix (etcd's
 * "prefix" convention): prefix with its last byte below 0xff incremented
 * and the rest cut; a prefix of only 0xff bytes (or empty) gives the one
 * NUL byte meaning "no upper bound". out must have room for plen bytes (1
 * at least); returns the length written.
 */
size_t es_etcd_prefix_end(const void *prefix, size_t plen, char *out);

/*
 * If body (len bytes, an HTTP response body) is an etcd error
 * {"error": "...", "message": "...", "code": N} (or a stream's
 * {"error": {"message": "...", "grpc_code": N}}), returns 1 and sets
 * *code and msg (truncated, NUL-terminated); else returns 0.
 */
int es_etcd_msg_error(const char *body, size_t len, int *code, char *msg,
		      size_t msgsz);

/*
 * Parses a unary response (range, put, deleterange, txn, lease grant or
 * keepalive: the members present decide; a keepalive's is wrapped in
 * "result") into *out (zeroed first; free with es_etcd_resp_free).
 * Errors: ES_ERR_PARSE (not JSON, or a member of the wrong type, or a
 * key or value that is not base64: err names the member), ES_ERR_NOMEM.
 */
es_err es_etcd_msg_parse(const char *body, size_t len, es_etcd_resp *out,
			 char *err, size_t errsz);
void es_etcd_resp_free(es_etcd_resp *r);

/*
 * Parses one line of a watch stream into *out (zeroed first; free with
 * es_etcd_watch_msg_free). A stream error line is not parsed here: see
 * es_etcd_msg_error. Errors as es_etcd_msg_parse.
 */
es_err es_etcd_msg_watch_parse(const char *line, size_t len,
			       es_etcd_watch_msg *out, char *err, size_t errsz);
void es_etcd_watch_msg_free(es_etcd_watch_msg *m);

/*
 * Splits a streamed response into lines. es_etcd_lines_feed takes the
 * next len bytes of the stream, calls line(ud, text, n) for every line
 * they complete (without its '\n' or "\r\n"; empty lines are skipped) and
 * keeps an unfinished last line in buf, whose bound (es_buf_init's max) is
 * the longest line taken. Errors: ES_ERR_TOOBIG (a line passed the
 * bound), ES_ERR_NOMEM, ES_ERR_STATE (line returned non-zero: reading
 * stopped there and the rest of data was dropped).
 */
typedef int (*es_etcd_line_fn)(void *ud, const char *text, size_t n);
es_err es_etcd_lines_feed(es_buf *buf, const char *data, size_t len,
			  es_etcd_line_fn line, void *ud);

#endif
