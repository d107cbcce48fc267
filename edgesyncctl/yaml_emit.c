/*
 * yaml_emit.c - cJSON to YAML for `-o yaml` (see yaml.h, es_yaml_emit).
 */
#include "yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "es_buf.h"
#include "es_json.h"
#include "yaml_int.h"

/* libyaml's output handler: appends to the es_buf at data; 0 (libyaml's
 * "failed") when it cannot. */
static int write_cb(void *data, unsigned char *buf, size_t size)
{
	return es_buf_append(data, buf, size) == ES_OK;
}

/* Style for a string: plain when it reads back as the same string. */
static yaml_scalar_style_t str_style(const char *s)
{
	static const char *const yaml11[] = { "y", "Y", "yes", "Yes", "YES", "n", "N",
					      "no", "No", "NO", "on", "On", "ON", "off",
					      "Off", "OFF", ".inf", ".Inf", ".INF", "-.inf",
					      ".nan", ".NaN", ".NAN", "=", "<<", NULL };
	size_t len = strlen(s);
	double d;
	const unsigned char *u;

	for (u = (const unsigned char *)s; *u; u++)
		if (*u < 0x20 || *u == 0x7f)
			return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	if (es_yaml_resolve_plain(s, len, &d) != SK_STR || es_yaml_is_one_of(s, len, yaml11))
		return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	return YAML_ANY_SCALAR_STYLE;
}

static int emit_scalar(yaml_emitter_t *em, const char *s, yaml_scalar_style_t st)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
					  (int)strlen(s), 1, 1, st))
		return 0;
	return yaml_emitter_emit(em, &ev);
}

static int emit_value(yaml_emitter_t *em, const cJSON *v, char *err, size_t errsz)
{
	yaml_event_t ev;
	const cJSON *c;
	char num[ES_JSON_NUMBER_LEN];

	if (cJSON_IsObject(v)) {
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return 0;
		for (c = v->child; c; c = c->next) {
			if (!emit_scalar(em, c->string ? c->string : "", str_style(c->string ? c->string : "")) ||
			    !emit_value(em, c, err, errsz))
				return 0;
		}
		return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
	}
	if (cJSON_IsArray(v)) {
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return 0;
		for (c = v->child; c; c = c->next)
			if (!emit_value(em, c, err, errsz))
				return 0;
		return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
	}
	if (cJSON_IsString(v))
		return emit_scalar(em, v->valuestring, str_style(v->valuestring));
	if (cJSON_IsNumber(v)) {
		/* JSON's text of the number is also a YAML 1.2 core schema
		 * int or float that reads back as the same double. */
		if (!es_json_number_text(v->valuedouble, num)) {
			es_errf(ES_ERR_INVAL, err, errsz, "number is not finite");
			return 0;
		}
		return emit_scalar(em, num, YAML_PLAIN_SCALAR_STYLE);
	}
	if (cJSON_IsTrue(v))
		return emit_scalar(em, "true", YAML_PLAIN_SCALAR_STYLE);
	if (cJSON_IsFalse(v))
		return emit_scalar(em, "false", YAML_PLAIN_SCALAR_STYLE);
	return emit_scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
}

char *es_yaml_emit(const cJSON *v, char *err, size_t errsz)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	es_buf b = { 0 };
	int ok;

	if (err && errsz)
		err[0] = '\0';
	if (!yaml_emitter_initialize(&em)) {
		es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		return NULL;
	}
	yaml_emitter_set_output(&em, write_cb, &b);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
	     yaml_emitter_emit(&em, &ev) &&
	     emit_value(&em, v, err, errsz) &&
	     yaml_document_end_event_initialize(&ev, 1) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_stream_end_event_initialize(&ev) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_emitter_flush(&em);
	if (!ok && err && errsz && !err[0])
		es_errf(b.err != ES_OK || em.error == YAML_MEMORY_ERROR ? ES_ERR_NOMEM : ES_ERR_INVAL,
			err, errsz, "YAML output failed: %s",
			em.problem ? em.problem : "out of memory");
	yaml_emitter_delete(&em);
	/* Nothing written is the empty text. */
	if (!ok || es_buf_append(&b, "", 0) != ES_OK) {
		es_buf_free(&b);
		return NULL;
	}
	return es_buf_detach(&b, NULL);
}
