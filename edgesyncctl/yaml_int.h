/*
 * yaml_int.h - scalar resolution shared by the manifest loader (yaml.c) and
 * the emitter (yaml_emit.c); not part of the esctl interface.
 */
#ifndef ES_CTL_YAML_INT_H
#define ES_CTL_YAML_INT_H

#include <stddef.h>

enum es_yaml_scalar_kind {
	SK_STR = 0,
	SK_NULL,
	SK_TRUE,
	SK_FALSE,
	SK_NUM,
	SK_RANGE, /* looks like a number but JSON cannot carry it exactly */
};

/*
 * Resolves the plain scalar s (len bytes, not NUL-terminated) with the YAML
 * 1.2 core schema (YAML 1.2.2 section 10.3.2); *num gets the value of
 * SK_NUM. SK_RANGE: an integer beyond +-2^53-1 or a float that overflows.
 */
enum es_yaml_scalar_kind es_yaml_resolve_plain(const char *s, size_t len, double *num);

/* 1 when s (len bytes) equals one of the NULL-terminated words. */
int es_yaml_is_one_of(const char *s, size_t len, const char *const *words);

#endif
