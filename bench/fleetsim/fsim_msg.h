/*
 * fsim_msg.h - the fleet simulator's messages, protocol versions 1 and 2
 * (proto/PROTOCOL.md): the report fixtures it replays, the text of every
 * message it sends, and what it reads from the controller's messages.
 * This is the only part of the simulator that knows the report format.
 */
#ifndef FSIM_MSG_H
#define FSIM_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "es_buf.h"
#include "es_err.h"

/* A report body as compact JSON with holes where the node's name goes
 * (metadata.name, status.nodeInfo.hostname, and an event's
 * involvedObject.name when it is the Node): parts[0] name parts[1] ...
 * name parts[nparts - 1]. */
typedef struct fsim_tmpl {
	char **parts;
	size_t nparts;
	size_t bytes;   /* bytes of the parts together */
} fsim_tmpl;

/* One report of a version 2 capture after its snapshot. */
typedef struct fsim_rec {
	double after_s;  /* seconds after the report before it */
	int event;       /* 1: an event report, 0: a delta */
	fsim_tmpl body;
} fsim_rec;

/* A captured agent's first snapshot and what followed it: the patches of
 * a version 1 agent, or the deltas and events of a version 2 one, with
 * the gaps between them. */
typedef struct fsim_replay {
	fsim_tmpl snapshot;
	fsim_tmpl *patches;     /* version 1 */
	size_t npatches;
	fsim_rec *recs;         /* version 2 */
	size_t nrecs;
	double recs_s;          /* seconds the recs span (their gaps added) */
} fsim_replay;

/*
 * Loads a capture (bench/fleetsim/capture.py) into *r (zeroed first; free
 * with fsim_replay_free). version 1: dir/snapshot.json (a Node object) and
 * dir/patches.jsonl (one JSON Merge Patch per line, RFC 7386). version 2:
 * dir/v2/snapshot.json and dir/v2/reports.jsonl (one object per line:
 * afterSeconds, a number >= 0; reportType "delta" or "event"; body, an
 * object). Errors: ES_ERR_IO (a file unreadable), ES_ERR_PARSE (not JSON,
 * a member missing or of the wrong type, no patch or no delta; err names
 * the file and line), ES_ERR_NOMEM.
 */
es_err fsim_replay_load(fsim_replay *r, const char *dir, int version, char *err,
			size_t errsz);
/* Frees what fsim_replay_load made. NULL-safe. */
void fsim_replay_free(fsim_replay *r);

/*
 * Builders: each appends one complete message as compact JSON to b (the
 * caller has put LWS_PRE bytes of headroom in front). Errors are b's
 * (sticky: check b->err once).
 */
/* hello: protocolVersion 1, node, agentVersion "fleetsim", bootId, labels
 * {"fleetsim": "true"}, capabilities, resourceVersion rv, nextSeq,
 * streamId. */
void fsim_msg_hello(es_buf *b, const char *node, const char *stream_id,
		    int64_t rv, int64_t next_seq);
/* hello of protocol version 2 as edgesync-agent makes it (es_proto_hello,
 * es_proto_make_v2): the members above, protocolVersion 2, the capability
 * keyed-patch, and deflate when deflate is not 0. */
void fsim_msg_hello_v2(es_buf *b, const char *node, const char *stream_id,
		       int64_t rv, int64_t next_seq, int deflate);
/* report of report_type type ("snapshot", "patch", "delta" or "event";
 * base_seq for a patch or delta) with body t, made now, naming node. */
void fsim_msg_report(es_buf *b, const fsim_tmpl *t, int64_t seq, const char *type,
		     int64_t base_seq, const char *node);
void fsim_msg_desired_ack(es_buf *b, int64_t rv);
void fsim_msg_ping(es_buf *b);
/* pong answering a ping whose time member was time (NULL: now). */
void fsim_msg_pong(es_buf *b, const char *time);

/* The message types the simulator tells apart. */
typedef enum fsim_in_type {
	FSIM_IN_OTHER = 0,  /* pong, or a type the simulator ignores */
	FSIM_IN_WELCOME,
	FSIM_IN_DESIRED,
	FSIM_IN_ACK,
	FSIM_IN_RESYNC,
	FSIM_IN_PING,
	FSIM_IN_ERROR,
} fsim_in_type;

/* What fsim_msg_parse read from one message of the controller. */
typedef struct fsim_in {
	fsim_in_type type;
	int64_t acked_seq;      /* welcome.ackedSeq */
	int64_t heartbeat_s;    /* welcome.heartbeatSeconds (0: absent) */
	int64_t proto;          /* welcome.protocolVersion (1: absent) */
	int deflate;            /* welcome.capabilities lists deflate */
	int64_t seq;            /* ack.seq */
	int64_t rv;             /* desired.resourceVersion */
	int full, more;         /* desired.full, desired.more */
	char time[40];          /* ping.time */
	char text[160];         /* error: "code: message" */
	char code[40];          /* error.code ("" when absent) */
	int64_t retry_after_s;  /* error.retryAfterSeconds (0: absent) */
} fsim_in;

/*
 * Reads one complete message (len bytes of text, borrowed). Errors:
 * ES_ERR_PARSE (not JSON, no string type, or a member of the listed types
 * missing or of the wrong type; err says which), ES_ERR_NOMEM.
 */
es_err fsim_msg_parse(const char *text, size_t len, fsim_in *out, char *err,
		      size_t errsz);

#endif
