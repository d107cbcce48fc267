/*
 * describe.c - `describe node` output (see describe.h).
 */
#include "describe.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "es_egress.h"
#include "es_time.h"
#include "print.h"

static const cJSON *get(const cJSON *v, const char *k)
{
	return cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, k) : NULL;
}

static const char *str(const cJSON *v, const char *k)
{
	const cJSON *s = get(v, k);
	return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* Scalar as text into buf: strings as they are, numbers, booleans. */
static const char *scalar(const cJSON *v, char *buf, size_t bufsz)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble == (double)(long long)v->valuedouble)
			snprintf(buf, bufsz, "%lld", (long long)v->valuedouble);
		else
			snprintf(buf, bufsz, "%g", v->valuedouble);
		return buf;
	}
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "true" : "false";
	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		char *s = cJSON_PrintUnformatted(v);
		snprintf(buf, bufsz, "%s", s ? s : "?");
		free(s);
		return buf;
	}
	return "<unknown>";
}

static void field(FILE *f, int indent, const char *label, const char *value)
{
	fprintf(f, "%*s%-*s %s\n", indent, "", 22 - indent, label, value ? value : "<unknown>");
}

static void field_bytes(FILE *f, int indent, const char *label, const cJSON *v)
{
	char buf[32];
	field(f, indent, label, cJSON_IsNumber(v) ? es_print_bytes(v->valuedouble, buf, sizeof(buf))
						  : NULL);
}

/* The title line, then a table of head and one row per member of items,
 * made by row. */
static es_err table_section(FILE *f, const char *title, const char *indent,
			    const char *const *head, int ncols, const cJSON *items,
			    es_err (*row)(es_print_table *t, const cJSON *it))
{
	es_print_table *t;
	const cJSON *it;
	es_err rc;

	fprintf(f, "%s\n", title);
	t = es_print_table_new(ncols);
	if (!t)
		return ES_ERR_NOMEM;
	rc = es_print_table_add(t, head);
	cJSON_ArrayForEach(it, items) {
		if (rc != ES_OK)
			break;
		rc = row(t, it);
	}
	if (rc == ES_OK)
		es_print_table_write(t, f, indent);
	es_print_table_free(t);
	return rc;
}

/* "kind/name" with the kind in lower case, into buf. */
static const char *kind_name(const char *k, const char *n, char *buf, size_t bufsz)
{
	char kind[64];
	size_t i;

	snprintf(kind, sizeof(kind), "%s", k ? k : "?");
	for (i = 0; kind[i]; i++)
		kind[i] = (char)tolower((unsigned char)kind[i]);
	snprintf(buf, bufsz, "%s/%s", kind, n ? n : "?");
	return buf;
}

static void labels(FILE *f, const cJSON *node)
{
	const cJSON *l, *ls = get(get(node, "metadata"), "labels");
	int first = 1;

	cJSON_ArrayForEach(l, ls) {
		if (!cJSON_IsString(l))
			continue;
		fprintf(f, "%-22s %s=%s\n", first ? "Labels:" : "", l->string, l->valuestring);
		first = 0;
	}
	if (first)
		fprintf(f, "%-22s <none>\n", "Labels:");
}

static void node_info(FILE *f, const cJSON *st)
{
	static const char *const keys[][2] = {
		{ "hostname", "Hostname:" }, { "kernelVersion", "Kernel Version:" },
		{ "osImage", "OS Image:" }, { "operatingSystem", "Operating System:" },
		{ "architecture", "Architecture:" }, { "machineID", "Machine ID:" },
		{ "bootID", "Boot ID:" }, { "agentVersion", "Agent Version:" },
	};
	const cJSON *ni = get(st, "nodeInfo"), *cap = get(st, "capacity");
	char buf[64];
	size_t i;

	fprintf(f, "Node Info:\n");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		field(f, 2, keys[i][1], str(ni, keys[i][0]));
	fprintf(f, "Capacity:\n");
	field(f, 2, "CPU:", get(cap, "cpu") ? scalar(get(cap, "cpu"), buf, sizeof(buf)) : NULL);
	field_bytes(f, 2, "Memory:", get(cap, "memoryBytes"));
}

static es_err fs_row(es_print_table *t, const cJSON *it)
{
	const cJSON *sz = get(it, "sizeBytes"), *av = get(it, "availBytes"),
		    *fr = get(it, "freeBytes");
	char s1[32] = "<unknown>", s2[32] = "<unknown>", pct[16] = "<unknown>";
	const char *cells[6];

	if (cJSON_IsNumber(sz))
		es_print_bytes(sz->valuedouble, s1, sizeof(s1));
	if (cJSON_IsNumber(av))
		es_print_bytes(av->valuedouble, s2, sizeof(s2));
	es_print_fs_use(sz, av, fr, pct, sizeof(pct));
	cells[0] = str(it, "mountpoint");
	cells[1] = str(it, "device");
	cells[2] = str(it, "fstype");
	cells[3] = s1;
	cells[4] = s2;
	cells[5] = pct;
	return es_print_table_add(t, cells);
}

static es_err if_row(es_print_table *t, const cJSON *it)
{
	char rx[32], tx[32], re[32], te[32];
	const char *cells[5];

	cells[0] = str(it, "interface");
	cells[1] = cJSON_IsNumber(get(it, "receiveBytes"))
			   ? es_print_bytes(get(it, "receiveBytes")->valuedouble, rx, sizeof(rx))
			   : NULL;
	cells[2] = cJSON_IsNumber(get(it, "transmitBytes"))
			   ? es_print_bytes(get(it, "transmitBytes")->valuedouble, tx, sizeof(tx))
			   : NULL;
	cells[3] = scalar(get(it, "receiveErrors"), re, sizeof(re));
	cells[4] = scalar(get(it, "transmitErrors"), te, sizeof(te));
	return es_print_table_add(t, cells);
}

static es_err usage(FILE *f, const cJSON *st, time_t now)
{
	const cJSON *u = get(st, "usage"), *mem = get(u, "memory"), *load = get(u, "load");
	const cJSON *util = get(get(u, "cpu"), "utilization"), *pr = get(u, "processes");
	const cJSON *avail = get(mem, "MemAvailable"), *total = get(mem, "MemTotal");
	static const char *const fs_head[] = { "MOUNTPOINT", "DEVICE", "FSTYPE", "SIZE",
					       "AVAIL", "USE%" };
	static const char *const if_head[] = { "INTERFACE", "RX", "TX", "RX-ERRORS",
					       "TX-ERRORS" };
	char line[256], a[32], b[32];
	time_t at;
	es_err rc;

	/* The agent sends figures only at usage reports (PROTOCOL.md "Usage
	 * figures"): say how old they are. */
	if (str(u, "timestamp") && es_time_parse_rfc3339(str(u, "timestamp"), &at) == 0)
		fprintf(f, "Usage (as of %s ago, %s):\n",
			es_print_age(now > at ? (int64_t)(now - at) : 0, a, sizeof(a)),
			str(u, "timestamp"));
	else
		fprintf(f, "Usage (time of measurement not reported by this agent):\n");
	if (cJSON_IsNumber(util))
		snprintf(line, sizeof(line), "%.1f%%", util->valuedouble * 100.0);
	field(f, 2, "CPU Utilization:", cJSON_IsNumber(util) ? line : NULL);
	if (cJSON_IsNumber(get(load, "load1")))
		snprintf(line, sizeof(line), "%.2f %.2f %.2f", get(load, "load1")->valuedouble,
			 cJSON_IsNumber(get(load, "load5")) ? get(load, "load5")->valuedouble : 0.0,
			 cJSON_IsNumber(get(load, "load15")) ? get(load, "load15")->valuedouble : 0.0);
	field(f, 2, "Load Average:", cJSON_IsNumber(get(load, "load1")) ? line : NULL);
	if (cJSON_IsNumber(avail) && cJSON_IsNumber(total) && total->valuedouble > 0)
		snprintf(line, sizeof(line), "%s of %s (%.1f%%)",
			 es_print_bytes(avail->valuedouble, a, sizeof(a)),
			 es_print_bytes(total->valuedouble, b, sizeof(b)),
			 100.0 * avail->valuedouble / total->valuedouble);
	field(f, 2, "Memory Available:",
	      cJSON_IsNumber(avail) && cJSON_IsNumber(total) && total->valuedouble > 0 ? line : NULL);
	if (cJSON_IsNumber(get(pr, "count")))
		snprintf(line, sizeof(line), "%.0f (threads %.0f, running %.0f, blocked %.0f)",
			 get(pr, "count")->valuedouble,
			 cJSON_IsNumber(get(pr, "threads")) ? get(pr, "threads")->valuedouble : 0.0,
			 cJSON_IsNumber(get(pr, "running")) ? get(pr, "running")->valuedouble : 0.0,
			 cJSON_IsNumber(get(pr, "blocked")) ? get(pr, "blocked")->valuedouble : 0.0);
	field(f, 2, "Processes:", cJSON_IsNumber(get(pr, "count")) ? line : NULL);

	rc = table_section(f, "  Filesystems:", "    ", fs_head, 6, get(u, "filesystems"), fs_row);
	if (rc == ES_OK)
		rc = table_section(f, "  Interfaces:", "    ", if_head, 5, get(u, "network"),
				   if_row);
	return rc;
}

/* One row per status.collectors entry; EVENTS and LOST are empty for the
 * collectors that count none, REASON is the error or why not ebpf. */
static es_err collector_row(es_print_table *t, const cJSON *c)
{
	char b1[8], b2[8], b3[24], b4[24];
	const char *cells[7];

	cells[0] = str(c, "name");
	cells[1] = str(c, "backend");
	cells[2] = scalar(get(c, "enabled"), b1, sizeof(b1));
	cells[3] = scalar(get(c, "healthy"), b2, sizeof(b2));
	cells[4] = get(c, "events") ? scalar(get(c, "events"), b3, sizeof(b3)) : "";
	cells[5] = get(c, "events") ? scalar(get(c, "eventsLost"), b4, sizeof(b4)) : "";
	cells[6] = str(c, "error") ? str(c, "error") : str(c, "reason") ? str(c, "reason") : "";
	return es_print_table_add(t, cells);
}

static es_err condition_row(es_print_table *t, const cJSON *c)
{
	const char *cells[5];

	cells[0] = str(c, "type");
	cells[1] = str(c, "status");
	cells[2] = str(c, "reason");
	cells[3] = str(c, "message") ? str(c, "message") : "";
	cells[4] = str(c, "lastTransitionTime");
	return es_print_table_add(t, cells);
}

static es_err collectors(FILE *f, const cJSON *st)
{
	static const char *const head[] = { "NAME", "BACKEND", "ENABLED", "HEALTHY",
					    "EVENTS", "LOST", "REASON" };

	return table_section(f, "Collectors:", "  ", head, 7, get(st, "collectors"),
			     collector_row);
}

static es_err conditions(FILE *f, const cJSON *st)
{
	static const char *const head[] = { "TYPE", "STATUS", "REASON", "MESSAGE",
					    "LAST-TRANSITION" };

	return table_section(f, "Conditions:", "  ", head, 5, get(st, "conditions"),
			     condition_row);
}

/* First of e.k or e.sub.k (sub.metadata.k too), or NULL. */
static const cJSON *entry_get(const cJSON *e, const char *sub, const char *k)
{
	const cJSON *v = get(e, k);

	if (!v)
		v = get(get(e, sub), k);
	if (!v)
		v = get(get(get(e, sub), "metadata"), k);
	if (!v)
		v = get(get(get(e, sub), "status"), k);
	return v;
}

/* An entry of GET nodes/NAME/describe differs when the server says it is
 * not in sync (controller/api/admin.h: `inSync`, `differences`). */
static int entry_differs(const cJSON *e)
{
	const cJSON *in = get(e, "inSync");

	if (cJSON_IsBool(in))
		return !cJSON_IsTrue(in);
	return cJSON_GetArraySize(get(e, "differences")) > 0;
}

static void difference(FILE *f, const cJSON *d)
{
	char b1[256], b2[256];
	const char *path = str(d, "path") ? str(d, "path") : str(d, "field");
	const cJSON *want = get(d, "desired"), *have = get(d, "reported");

	if (cJSON_IsString(d)) {
		fprintf(f, "      - %s\n", d->valuestring);
		return;
	}
	if (!have)
		have = get(d, "actual");
	if (str(d, "message")) {
		fprintf(f, "      - %s%s%s\n", path ? path : "", path ? ": " : "", str(d, "message"));
		return;
	}
	fprintf(f, "      - %s: desired %s, reported %s\n", path ? path : "?",
		want ? scalar(want, b1, sizeof(b1)) : "<none>",
		have ? scalar(have, b2, sizeof(b2)) : "<none>");
}

/* Desired, reported and actual side by side for each entry whose agent
 * reports an actual state (EgressPolicy: the rules in its kernel). */
static es_err actual_section(FILE *f, const cJSON *list)
{
	const cJSON *e, *r;
	int first = 1;

	cJSON_ArrayForEach(e, list) {
		const cJSON *a = get(e, "actual"), *des = get(e, "desired");
		const cJSON *rep = get(e, "reported"), *c, *att;
		const char *k = str(e, "kind"), *n = str(e, "name");
		cJSON *canon = NULL;
		char b1[32], b2[32], why[256], kn[600];

		if (!cJSON_IsObject(a))
			continue;
		if (first)
			fprintf(f, "  Desired / Reported / Actual:\n");
		first = 0;
		fprintf(f, "    %s:\n", kind_name(k, n, kn, sizeof(kn)));
		fprintf(f, "      Desired:   generation %s, action %s\n",
			get(des, "generation") ? scalar(get(des, "generation"), b1, sizeof(b1)) : "-",
			str(get(des, "spec"), "action") ? str(get(des, "spec"), "action") : "-");
		fprintf(f, "      Reported:  observedGeneration %s",
			get(rep, "observedGeneration") ?
			scalar(get(rep, "observedGeneration"), b2, sizeof(b2)) : "-");
		cJSON_ArrayForEach(c, get(rep, "conditions"))
			if (str(c, "type") && strcmp(str(c, "type"), "Applied"))
				fprintf(f, ", %s=%s (%s)", str(c, "type"),
					str(c, "status") ? str(c, "status") : "?",
					str(c, "reason") ? str(c, "reason") : "?");
		fprintf(f, "\n      Actual:    backend %s, %s",
			str(a, "backend") ? str(a, "backend") : "?",
			cJSON_IsTrue(get(a, "loaded")) ? "loaded" : "not loaded");
		if (str(a, "reason"))
			fprintf(f, " (%s)", str(a, "reason"));
		if (get(a, "generation"))
			fprintf(f, ", generation %s", scalar(get(a, "generation"), b1, sizeof(b1)));
		if (str(a, "action"))
			fprintf(f, ", action %s", str(a, "action"));
		if (get(a, "targetCgroups") && !cJSON_IsTrue(get(a, "nodeWide")))
			fprintf(f, ", %s cgroup(s)", scalar(get(a, "targetCgroups"), b2, sizeof(b2)));
		else if (cJSON_IsTrue(get(a, "nodeWide")))
			fprintf(f, ", whole node");
		if (get(a, "violations"))
			fprintf(f, ", %s refused", scalar(get(a, "violations"), b1, sizeof(b1)));
		att = get(a, "attachments");
		if (cJSON_IsObject(att)) {
			fprintf(f, "\n      Attached:  ");
			cJSON_ArrayForEach(r, att)
				fprintf(f, "%s=%s%s", r->string, scalar(r, b1, sizeof(b1)),
					r->next ? " " : "");
		}
		fprintf(f, "\n      Rules in kernel:\n");
		if (es_egress_rules_canon(get(a, "rules"), &canon, why, sizeof(why)) == ES_ERR_NOMEM)
			return ES_ERR_NOMEM;
		if (!canon || cJSON_GetArraySize(canon) == 0)
			fprintf(f, "        <none>\n");
		cJSON_ArrayForEach(r, canon)
			fprintf(f, "        %s\n", r->valuestring);
		cJSON_Delete(canon);
	}
	return ES_OK;
}

static es_err objects(FILE *f, const cJSON *st, const cJSON *desc, const char *desc_err)
{
	static const char *const head[] = { "KIND/NAME", "GENERATION", "OBSERVED", "APPLIED",
					    "REASON", "STATE" };
	const cJSON *list = NULL, *e;
	es_print_table *t;
	es_err rc;
	int any_diff = 0;

	fprintf(f, "Objects:\n");
	if (desc_err)
		fprintf(f, "  (describe unavailable: %s; showing reported objects)\n", desc_err);
	if (cJSON_IsArray(desc))
		list = desc;
	else if (desc)
		list = get(desc, "objects") ? get(desc, "objects") : get(desc, "items");
	if (!desc)
		list = get(st, "objects");
	if (cJSON_GetArraySize(list) == 0) {
		fprintf(f, "  <none>\n");
		return ES_OK;
	}
	t = es_print_table_new(6);
	if (!t)
		return ES_ERR_NOMEM;
	rc = es_print_table_add(t, head);
	cJSON_ArrayForEach(e, list) {
		char kn[600], g[32], og[32];
		const cJSON *cond = NULL, *c;
		int differs = entry_differs(e);
		const char *k = str(e, "kind"), *n = str(e, "name");
		const char *cells[6];
		if (rc != ES_OK)
			break;
		if (!k)
			k = str(get(e, "desired"), "kind");
		if (!n)
			n = str(get(get(e, "desired"), "metadata"), "name");
		kind_name(k, n, kn, sizeof(kn));
		cJSON_ArrayForEach(c, entry_get(e, "reported", "conditions")) {
			if (str(c, "type") && strcmp(str(c, "type"), "Applied") == 0)
				cond = c;
		}
		cells[0] = kn;
		cells[1] = entry_get(e, "desired", "generation")
				   ? scalar(entry_get(e, "desired", "generation"), g, sizeof(g))
				   : "-";
		cells[2] = entry_get(e, "reported", "observedGeneration")
				   ? scalar(entry_get(e, "reported", "observedGeneration"), og, sizeof(og))
				   : "-";
		cells[3] = cond ? str(cond, "status") : "-";
		cells[4] = cond && str(cond, "reason") ? str(cond, "reason") : "-";
		cells[5] = !desc ? "-" : differs ? "DIFFERS" : "InSync";
		if (differs)
			any_diff = 1;
		rc = es_print_table_add(t, cells);
	}
	if (rc == ES_OK)
		es_print_table_write(t, f, "  ");
	es_print_table_free(t);
	if (rc == ES_OK)
		rc = actual_section(f, list);
	if (rc != ES_OK || !any_diff)
		return rc;
	fprintf(f, "  Differences:\n");
	cJSON_ArrayForEach(e, list) {
		const cJSON *d;
		char kn[600];
		if (!entry_differs(e))
			continue;
		fprintf(f, "    %s:\n", kind_name(str(e, "kind"), str(e, "name"), kn, sizeof(kn)));
		cJSON_ArrayForEach(d, get(e, "differences"))
			difference(f, d);
	}
	return ES_OK;
}

static void sync_section(FILE *f, const cJSON *st, time_t now)
{
	const cJSON *s = get(st, "sync");
	char b1[32], b2[32], b3[32], seen[96], age[32];
	const char *ls = str(s, "lastSeen");

	fprintf(f, "Sync:\n");
	/* The serving controller (etcd store): "<none>" when no controller
	 * holds the node's session; absent with the SQLite store. */
	if (str(s, "controller") || str(s, "stateController") || str(s, "recordController"))
		field(f, 2, "Controller:", str(s, "controller") ? str(s, "controller") : "<none>");
	if (str(s, "controller") || str(s, "stateController") || str(s, "recordController"))
		field(f, 2, "Status From:", str(s, "stateController") ? str(s, "stateController")
								     : "<none>");
	if (str(s, "recordController"))
		field(f, 2, "Conditions From:", str(s, "recordController"));
	field(f, 2, "Connected:", get(s, "connected") ? scalar(get(s, "connected"), b1, sizeof(b1))
						      : NULL);
	if (ls)
		snprintf(seen, sizeof(seen), "%s (%s ago)", ls,
			 es_print_age_of(ls, now, age, sizeof(age)));
	field(f, 2, "Last Seen:", ls ? seen : NULL);
	field(f, 2, "Acked Seq:", get(s, "ackedSeq") ? scalar(get(s, "ackedSeq"), b2, sizeof(b2))
						     : NULL);
	field(f, 2, "Desired Version:",
	      get(s, "desiredResourceVersion")
		      ? scalar(get(s, "desiredResourceVersion"), b3, sizeof(b3))
		      : NULL);
}

es_err es_describe_node(FILE *f, const cJSON *node, const cJSON *desc,
			const char *desc_err, time_t now)
{
	const cJSON *st = get(node, "status");
	es_err rc;

	field(f, 0, "Name:", str(get(node, "metadata"), "name"));
	labels(f, node);
	node_info(f, st);
	rc = usage(f, st, now);
	if (rc == ES_OK)
		rc = collectors(f, st);
	if (rc == ES_OK)
		rc = conditions(f, st);
	if (rc == ES_OK)
		rc = objects(f, st, desc, desc_err);
	if (rc == ES_OK)
		sync_section(f, st, now);
	return rc;
}
