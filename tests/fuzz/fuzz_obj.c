/*
 * fuzz_obj.c - libFuzzer target: desired-object validation, every kind
 * (lib/es_obj.c es_obj_validate_desired, which dispatches on the kind the
 * JSON names; the spec parsers of lib/es_health.c and lib/es_egress.c; the
 * CollectorConfig spec of es_obj_collector_cfg).
 *
 * Input: JSON (es_json_parse): one object, an array of objects, or a
 * desired message whose `objects` are checked one by one. For each object:
 *  - es_obj_validate_desired; when it accepts, the object's kind is a
 *    desired kind, its name valid, and the parser of that kind accepts the
 *    spec too;
 *  - whatever the kind, each spec parser runs on the object's `spec` (or on
 *    the object itself when it has none), so every parser sees every input;
 *    what a parser accepts must read back: a HealthRule's `for` formatted
 *    again parses to the same milliseconds, its metric and operator name
 *    themselves; an EgressPolicy's CIDRs formatted again parse to the same
 *    network, and its rules have a canonical list;
 *  - es_obj_selects runs on the object's own labels, and es_egress_diff on
 *    the spec and an actual kernel state, for their crashes only: the
 *    object's own `actual` or `status.actual`, else the first `actual` of a
 *    report in the same input (body.status.objects[], where agents report
 *    it; seed.sh makes such an input of a golden policy and report).
 */
#include <string.h>

#include "es_egress.h"
#include "es_health.h"
#include "es_json.h"
#include "es_obj.h"
#include "fuzz_util.h"

static void check_health(const cJSON *spec, int must_accept)
{
	es_health_rule rule;
	char err[512] = "", buf[64];
	int64_t ms = -1;
	es_err rc = es_health_rule_parse(spec, &rule, err, sizeof(err));

	FUZZ_CHECK(!must_accept || rc == ES_OK, "valid HealthRule refused: %s", err);
	if (rc != ES_OK) {
		FUZZ_CHECK(err[0] != '\0', "HealthRule refused without a message");
		return;
	}
	FUZZ_CHECK(es_health_metric_at((size_t)rule.metric) != NULL,
		   "metric index %d out of the catalogue", rule.metric);
	FUZZ_CHECK(es_health_metric_find(es_health_metric_at((size_t)rule.metric)->name) ==
		   rule.metric, "metric %d does not find itself", rule.metric);
	FUZZ_CHECK(es_health_op_parse(es_health_op_name(rule.op)) == rule.op,
		   "operator %d does not name itself", (int)rule.op);
	FUZZ_CHECK(rule.for_ms >= 0 && rule.for_ms <= ES_HEALTH_FOR_MAX_MS,
		   "for = %lld ms out of range", (long long)rule.for_ms);
	FUZZ_CHECK(strlen(rule.condition_type) <= ES_HEALTH_TYPE_MAX, "conditionType too long");
	es_health_duration_format(rule.for_ms, buf, sizeof(buf));
	FUZZ_CHECK(es_health_duration_parse(buf, &ms, err, sizeof(err)) == ES_OK &&
		   ms == rule.for_ms, "for = %lld ms formats as \"%s\", which reads %lld ms",
		   (long long)rule.for_ms, buf, (long long)ms);
	es_health_format_value(rule.threshold, buf, sizeof(buf));
}

static void check_egress(const cJSON *spec, const cJSON *actual, int must_accept)
{
	static es_egress_spec out; /* 100 KB: not on the stack */
	char err[512] = "", buf[64];
	cJSON *canon = NULL, *diffs = NULL;
	es_err rc = es_egress_spec_parse(spec, &out, err, sizeof(err));

	FUZZ_CHECK(!must_accept || rc == ES_OK, "valid EgressPolicy refused: %s", err);
	if (rc != ES_OK) {
		FUZZ_CHECK(err[0] != '\0', "EgressPolicy refused without a message");
		return;
	}
	FUZZ_CHECK(out.nrules >= 1 && out.nrules <= ES_EGRESS_RULES_MAX, "%zu rules",
		   out.nrules);
	for (size_t i = 0; i < out.nrules; i++) {
		const es_egress_rule *r = &out.rules[i];
		es_egress_cidr again;

		es_egress_cidr_format(&r->cidr, buf, sizeof(buf));
		FUZZ_CHECK(es_egress_cidr_parse(buf, &again, err, sizeof(err)) == ES_OK,
			   "rule %zu: CIDR formats as %s, which is refused: %s", i, buf, err);
		FUZZ_CHECK(again.family == r->cidr.family && again.prefix == r->cidr.prefix &&
			   memcmp(again.addr, r->cidr.addr, sizeof(again.addr)) == 0,
			   "rule %zu: CIDR formats as %s, which reads another network", i, buf);
		FUZZ_CHECK(es_egress_cidr_contains(&r->cidr, &again), "a CIDR contains itself");
		FUZZ_CHECK(r->nports <= ES_EGRESS_PORTS_MAX, "%zu port ranges", r->nports);
		for (size_t k = 0; k < r->nports; k++)
			FUZZ_CHECK(r->ports[k].from >= 1 && r->ports[k].from <= r->ports[k].to,
				   "rule %zu: port range %u-%u", i, r->ports[k].from,
				   r->ports[k].to);
	}
	rc = es_egress_rules_canon(cJSON_GetObjectItemCaseSensitive(spec, "rules"), &canon,
				   err, sizeof(err));
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM, "accepted rules have no canonical "
		   "list: %s", err);
	if ((diffs = cJSON_CreateArray()) != NULL)
		es_egress_diff(spec, actual, diffs);
	cJSON_Delete(canon);
	cJSON_Delete(diffs);
}

static void check_collector(const cJSON *spec, int must_accept)
{
	es_collector_cfg cfg;
	char err[512] = "";
	es_err rc = es_obj_collector_cfg(spec, &cfg, err, sizeof(err));

	FUZZ_CHECK(!must_accept || rc == ES_OK, "valid CollectorConfig refused: %s", err);
	if (rc != ES_OK)
		return;
	FUZZ_CHECK(cfg.interval_s >= 1 && cfg.interval_s <= 3600, "interval %d",
		   cfg.interval_s);
	FUZZ_CHECK((cfg.mask & ~(unsigned)ES_COLLECT_ALL) == 0, "mask %#x", cfg.mask);
}

/* The object's own actual state: `actual` or `status.actual`; NULL. */
static const cJSON *own_actual(const cJSON *obj)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, "actual");

	return a ? a : cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "status"), "actual");
}

/* The first actual state in a list of objects and report messages. */
static const cJSON *first_actual(const cJSON *list)
{
	const cJSON *it, *objs, *o, *a;

	cJSON_ArrayForEach(it, list) {
		if ((a = own_actual(it)) != NULL)
			return a;
		objs = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(it, "body"), "status"),
			"objects");
		if (!cJSON_IsArray(objs))
			continue;
		cJSON_ArrayForEach(o, objs)
			if ((a = own_actual(o)) != NULL)
				return a;
	}
	return NULL;
}

static void check_object(const cJSON *obj, const cJSON *fallback)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const cJSON *actual = own_actual(obj) ? own_actual(obj) : fallback;
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	char err[512] = "";
	es_kind kind = ES_KIND_UNKNOWN;
	es_err rc = es_obj_validate_desired(obj, err, sizeof(err));

	if (rc == ES_OK) {
		kind = es_obj_kind(obj);
		FUZZ_CHECK(kind == ES_KIND_COLLECTOR_CONFIG || kind == ES_KIND_HEALTH_RULE ||
			   kind == ES_KIND_EGRESS_POLICY, "accepted kind %d", (int)kind);
		FUZZ_CHECK(es_obj_name_valid(es_obj_name(obj)), "accepted name is invalid");
		FUZZ_CHECK(es_obj_kind_parse(es_obj_kind_name(kind)) == kind &&
			   es_obj_kind_parse(es_obj_kind_plural(kind)) == kind,
			   "kind %d does not name itself", (int)kind);
	} else {
		FUZZ_CHECK(rc == ES_ERR_INVAL || rc == ES_ERR_NOMEM, "error %d", rc);
		FUZZ_CHECK(rc != ES_ERR_INVAL || err[0] != '\0', "refused without a message");
	}
	if (!spec)
		spec = obj;
	check_collector(spec, kind == ES_KIND_COLLECTOR_CONFIG);
	check_health(spec, kind == ES_KIND_HEALTH_RULE);
	check_egress(spec, actual, kind == ES_KIND_EGRESS_POLICY);
	es_obj_selects(obj, cJSON_GetObjectItemCaseSensitive(md, "labels"));
	es_obj_selects(obj, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *root = NULL;
	const cJSON *list, *it;
	char err[256];

	if (es_json_parse((const char *)data, size, ES_JSON_MAX_DEPTH, &root, err,
			  sizeof(err)) != ES_OK)
		return 0;
	list = cJSON_GetObjectItemCaseSensitive(root, "objects");
	if (cJSON_IsArray(root))
		list = root;
	if (cJSON_IsArray(list)) {
		const cJSON *actual = first_actual(list);

		cJSON_ArrayForEach(it, list)
			check_object(it, actual);
	} else {
		check_object(root, NULL);
	}
	cJSON_Delete(root);
	return 0;
}
