/*
 * es_sample.c - one collection round of the node's state as C fields
 * (es_sample.h).
 */
#include <stdlib.h>
#include <string.h>

#include "es_sample.h"

void es_sample_init(es_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->cpu_utilization = ES_SAMPLE_NONE;
	s->load1 = s->load5 = s->load15 = ES_SAMPLE_NONE;
	s->mem_total = s->mem_available = ES_SAMPLE_NONE;
	s->proc_count = s->proc_threads = ES_SAMPLE_NONE;
	s->proc_running = s->proc_blocked = ES_SAMPLE_NONE;
}

static void free_mem(es_sample *s)
{
	for (size_t i = 0; i < s->nmem; i++)
		free(s->mem[i].name);
	free(s->mem);
	s->mem = NULL;
	s->nmem = 0;
}

static void free_fs(es_sample *s)
{
	for (size_t i = 0; i < s->nfs; i++) {
		free(s->fs[i].device);
		free(s->fs[i].mountpoint);
		free(s->fs[i].fstype);
	}
	free(s->fs);
	s->fs = NULL;
	s->nfs = 0;
}

static void free_ifaces(es_sample *s)
{
	for (size_t i = 0; i < s->nifaces; i++)
		free(s->ifaces[i].name);
	free(s->ifaces);
	s->ifaces = NULL;
	s->nifaces = 0;
}

void es_sample_clear(es_sample *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < ES_SAMPLE_COLLECTORS; i++)
		free(s->collectors[i].error);
	free_mem(s);
	free_fs(s);
	free_ifaces(s);
	es_sample_init(s);
}

void es_sample_move(es_sample *dst, es_sample *src)
{
	es_sample_clear(dst);
	*dst = *src;
	es_sample_init(src);
}

int es_sample_has(double v)
{
	return !isnan(v);
}

es_err es_sample_mem_alloc(es_sample *s, size_t n)
{
	free_mem(s);
	if (n == 0)
		return ES_OK;
	s->mem = calloc(n, sizeof(*s->mem));
	if (s->mem == NULL)
		return ES_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		s->mem[i].value = ES_SAMPLE_NONE;
	s->nmem = n;
	return ES_OK;
}

es_err es_sample_fs_alloc(es_sample *s, size_t n)
{
	free_fs(s);
	if (n == 0)
		return ES_OK;
	s->fs = calloc(n, sizeof(*s->fs));
	if (s->fs == NULL)
		return ES_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		es_sample_fs *f = &s->fs[i];

		f->size_bytes = f->avail_bytes = f->free_bytes = ES_SAMPLE_NONE;
		f->files = f->files_free = ES_SAMPLE_NONE;
	}
	s->nfs = n;
	return ES_OK;
}

es_err es_sample_ifaces_alloc(es_sample *s, size_t n)
{
	free_ifaces(s);
	if (n == 0)
		return ES_OK;
	s->ifaces = calloc(n, sizeof(*s->ifaces));
	if (s->ifaces == NULL)
		return ES_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		es_sample_iface *f = &s->ifaces[i];

		f->receive_bytes = f->receive_packets = ES_SAMPLE_NONE;
		f->receive_errors = f->receive_drop = ES_SAMPLE_NONE;
		f->transmit_bytes = f->transmit_packets = ES_SAMPLE_NONE;
		f->transmit_errors = f->transmit_drop = ES_SAMPLE_NONE;
	}
	s->nifaces = n;
	return ES_OK;
}

es_err es_sample_set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = NULL;
	if (src == NULL)
		return ES_OK;
	*dst = strdup(src);
	return *dst != NULL ? ES_OK : ES_ERR_NOMEM;
}

const es_sample_fs *es_sample_root_fs(const es_sample *s)
{
	for (size_t i = 0; i < s->nfs; i++)
		if (s->fs[i].mountpoint != NULL && strcmp(s->fs[i].mountpoint, "/") == 0)
			return &s->fs[i];
	return NULL;
}

size_t es_sample_ifaces_besides_lo(const es_sample *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nifaces; i++)
		if (s->ifaces[i].name != NULL && strcmp(s->ifaces[i].name, "lo") != 0)
			n++;
	return n;
}
