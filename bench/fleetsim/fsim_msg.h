/*
 * fsim_msg.h - the fleet simulator's messages, protocol v1
 * (proto/PROTOCOL.md): the report fixture it replays, the text of every
 * message it sends, and what it reads from the controller's messages.
 * This is the only part of the simulator that knows the report format; a
 * later report format is a second set of builders here.
 */
#ifndef FSIM_MSG_H
#define FSIM_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "es_buf.h"
#include "es_err.h"

/* A report body as compact JSON with holes where the node's name goes
 * (metadata.name, status.nodeInfo.hostname): parts[0] name parts[1] ...
 * name parts[nparts - 1]. */
typedef struct fsim_tmpl {
	char **parts;
	size_t nparts;
	size_t bytes;   /* bytes of the parts together */
} fsim_tmpl;

/* A captured agent's first snapshot and the patches that followed it. */
typedef struct fsim_replay {
	fsim_tmpl snapshot;
	fsim_tmpl *patches;
	size_t npatches;
} fsim_replay;

/*
 * Loads dir/snapshot.json (a Node object) and dir/patches.jsonl (one JSON
 * Merge Patch per line, RFC 7386) into *r (zeroed first; free with
 * fsim_replay_free). Errors: ES_ERR_IO (a file unreadable), ES_ERR_PARSE
 * (not JSON, or no patch; err names the file and line), ES_ERR_NOMEM.
 */
es_err fsim_replay_load(fsim_replay *r, const char *dir, char *err, size_t errsz);
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
/* report of report_type "snapshot" or "patch" (base_seq for a patch) with
 * body t, made now, naming node. */
void fsim_msg_report(es_buf *b, const fsim_tmpl *t, int64_t seq, int snapshot,
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
	int64_t seq;            /* ack.seq */
	int64_t rv;             /* desired.resourceVersion */
	int full, more;         /* desired.full, desired.more */
	char time[40];          /* ping.time */
	char text[160];         /* error: "code: message" */
} fsim_in;

/*
 * Reads one complete message (len bytes of text, borrowed). Errors:
 * ES_ERR_PARSE (not JSON, no string type, or a member of the listed types
 * missing or of the wrong type; err says which), ES_ERR_NOMEM.
 */
es_err fsim_msg_parse(const char *text, size_t len, fsim_in *out, char *err,
		      size_t errsz);

#endif
