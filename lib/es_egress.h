/*
 * es_egress.h - the EgressPolicy spec (proto/PROTOCOL.md "EgressPolicy",
 * proto/schemas/egresspolicy.json): parsing and validation shared by the
 * controller (refuses a bad spec at apply time) and the agent (compiles it
 * into its kernel maps), and the comparison of a spec with the rules an
 * agent reports as loaded in the kernel (the three-state view).
 *
 * Spec members: nodeSelector, action ("Deny": the listed destinations are
 * refused; "Allow": only the listed destinations are allowed), rules
 * [{cidr, protocol, ports}], targets {cgroupPathPrefix, systemdUnit, podUID,
 * containerID} (absent: the whole node).
 */
#ifndef ES_EGRESS_H
#define ES_EGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"

#define ES_EGRESS_RULES_MAX 64  /* rules per policy */
#define ES_EGRESS_PORTS_MAX 16  /* port ranges per rule */
#define ES_EGRESS_TARGET_MAX 512 /* bytes of one target string, with NUL */

typedef enum es_egress_action {
	ES_EGRESS_DENY = 0,
	ES_EGRESS_ALLOW = 1,
} es_egress_action;

/* Protocol numbers as in IANA's "Assigned Internet Protocol Numbers". */
typedef enum es_egress_proto {
	ES_EGRESS_PROTO_ANY = 0,
	ES_EGRESS_PROTO_TCP = 6,
	ES_EGRESS_PROTO_UDP = 17,
} es_egress_proto;

typedef struct es_egress_cidr {
	int family;          /* 4 or 6 */
	uint8_t addr[16];    /* network byte order; IPv4 in addr[0..3] */
	int prefix;          /* 0..32 or 0..128 */
} es_egress_cidr;

typedef struct es_egress_range {
	uint16_t from, to;   /* inclusive, 1..65535 (0..65535: all ports) */
} es_egress_range;

typedef struct es_egress_rule {
	es_egress_cidr cidr;
	es_egress_proto proto;
	size_t nports;       /* 0: every port */
	es_egress_range ports[ES_EGRESS_PORTS_MAX];
} es_egress_rule;

typedef struct es_egress_targets {
	int node;            /* 1: no targets member, the whole node */
	char cgroup_prefix[ES_EGRESS_TARGET_MAX]; /* "" when absent */
	char systemd_unit[ES_EGRESS_TARGET_MAX];
	char pod_uid[ES_EGRESS_TARGET_MAX];
	char container_id[ES_EGRESS_TARGET_MAX];
} es_egress_targets;

typedef struct es_egress_spec {
	es_egress_action action;
	size_t nrules;
	es_egress_rule rules[ES_EGRESS_RULES_MAX];
	es_egress_targets targets;
} es_egress_spec;

/*
 * Parses a CIDR: "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32
 * or /128). IPv4 in dotted quad (inet_pton), IPv6 as RFC 4291 text. Bits
 * past the prefix must be zero (the address must be the network's).
 * Errors: ES_ERR_INVAL with err saying what is wrong (no field name: the
 * caller prefixes it).
 */
es_err es_egress_cidr_parse(const char *s, es_egress_cidr *out, char *err,
			    size_t errsz);

/* Writes c as "a.b.c.d/n" or RFC 5952 "x::y/n" into buf (at least 64
 * bytes for any value); returns buf. */
char *es_egress_cidr_format(const es_egress_cidr *c, char *buf, size_t sz);

/* 1 when every address of inner is in outer (same family, outer's prefix
 * not longer, network bits equal), else 0. */
int es_egress_cidr_contains(const es_egress_cidr *outer,
			    const es_egress_cidr *inner);

/*
 * Parses one element of a rule's `ports`: an integer port (1..65535), a
 * string "N" or "FROM-TO", or an object {from, to} (to defaults to from).
 * Requires 1 <= from <= to <= 65535. Errors: ES_ERR_INVAL with err (no
 * field name).
 */
es_err es_egress_range_parse(const cJSON *v, es_egress_range *out, char *err,
			     size_t errsz);

/*
 * Parses and validates an EgressPolicy spec (the object's `spec`) into
 * *out. Refuses unknown members, a missing or unknown action, rules that
 * are not an array of at most ES_EGRESS_RULES_MAX objects, a bad cidr,
 * protocol (TCP, UDP or Any; default Any), ports (at most
 * ES_EGRESS_PORTS_MAX; ports with protocol Any are allowed), an empty
 * targets object, and target strings that are empty, too long, or contain
 * ".." path parts (cgroupPathPrefix), '/' (systemdUnit, podUID,
 * containerID), or are not the form Kubernetes uses (podUID: an RFC 4122
 * UUID; containerID: 12..64 hex digits, optionally "<runtime>://").
 * Errors: ES_ERR_INVAL with err naming the field from "spec", e.g.
 * "spec.rules[0].cidr: \"10.0.0.1/8\" has host bits set".
 */
es_err es_egress_spec_parse(const cJSON *spec, es_egress_spec *out, char *err,
			    size_t errsz);

/* Validates without keeping the result (allocates one es_egress_spec).
 * Errors: as es_egress_spec_parse, and ES_ERR_NOMEM. */
es_err es_egress_spec_validate(const cJSON *spec, char *err, size_t errsz);

/* "TCP", "UDP" or "Any". */
const char *es_egress_proto_name(es_egress_proto p);

/*
 * The canonical rule list of a JSON `rules` array (as in a spec, or as an
 * agent reports the rules loaded in its kernel): one string
 * "<protocol> <cidr> <from>-<to>" per port range ("0-65535" for every
 * port), sorted, duplicates removed. *out is a new JSON array of strings.
 * Errors: ES_ERR_INVAL (err names the element, from "rules"),
 * ES_ERR_NOMEM.
 */
es_err es_egress_rules_canon(const cJSON *rules, cJSON **out, char *err,
			     size_t errsz);

/*
 * The three-state comparison for one EgressPolicy: desired spec (the
 * object's spec) against `actual`, what the agent reports as loaded in the
 * kernel (PROTOCOL.md "Actual state of an EgressPolicy": backend, action,
 * rules, attachments). Appends one human-readable string to diffs (a JSON
 * array) per difference: actual state missing, action, each rule in the
 * spec but not in the kernel and each rule in the kernel but not in the
 * spec, and hooks whose attachment count is not 1. Returns 0, or -1 on
 * allocation failure.
 */
int es_egress_diff(const cJSON *spec, const cJSON *actual, cJSON *diffs);

#endif
