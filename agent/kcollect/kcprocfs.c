/*
 * kcprocfs.c - /proc parsers for the kernel collectors' fallbacks
 * (kcprocfs.h).
 */
#include "kcollect/kcprocfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 512

void es_kcprocfs_tcp_set_clear(es_kcprocfs_tcp_set *s)
{
	if (!s)
		return;
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses exactly n hex digits at s into *out; -1 when one is not hex. */
static int parse_hex(const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int h = hexval(s[i]);

		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	*out = v;
	return 0;
}

/* "HHHHHHHH:PPPP" (IPv4) or 32 hex digits ":PPPP" (IPv6). Each 8-digit word
 * is a u32 as the kernel holds it in memory, printed in host order. */
static int parse_endpoint(const char *s, int family, uint8_t addr[16], uint16_t *port)
{
	size_t words = family == 4 ? 1 : 4, i;
	uint32_t w, p;

	if (strlen(s) != words * 8 + 5 || s[words * 8] != ':')
		return -1;
	memset(addr, 0, 16);
	for (i = 0; i < words; i++) {
		if (parse_hex(s + i * 8, 8, &w))
			return -1;
		memcpy(addr + i * 4, &w, 4);
	}
	if (parse_hex(s + words * 8 + 1, 4, &p))
		return -1;
	*port = (uint16_t)p;
	return 0;
}

static es_err set_push(es_kcprocfs_tcp_set *set, const es_kcprocfs_tcp_conn *c)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		es_kcprocfs_tcp_conn *v = realloc(set->v, cap * sizeof(*v));

		if (!v)
			return ES_ERR_NOMEM;
		set->v = v;
		set->cap = cap;
	}
	set->v[set->n++] = *c;
	return ES_OK;
}

es_err es_kcprocfs_tcp_read(const char *path, int family, es_kcprocfs_tcp_set *set,
			    char *err, size_t errsz)
{
	char line[LINE_MAX_LEN], local[64], remote[64];
	es_kcprocfs_tcp_conn c;
	unsigned lineno = 0, st;
	es_err rc = ES_OK;
	FILE *f = NULL;
	int nf;

	if (family != 4 && family != 6)
		return es_errf(ES_ERR_INVAL, err, errsz, "tcp family %d: want 4 or 6", family);
	f = fopen(path, "re");
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%u: line too long", path, lineno);
			goto cleanup;
		}
		if (lineno == 1)
			continue;
		memset(&c, 0, sizeof(c));
		nf = sscanf(line, " %*u: %63s %63s %x", local, remote, &st);
		if (nf != 3 || st == 0 || st > ES_KCP_TCP_STATE_MAX ||
		    parse_endpoint(local, family, c.saddr, &c.sport) ||
		    parse_endpoint(remote, family, c.daddr, &c.dport)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "%s:%u: not a tcp socket row", path, lineno);
			goto cleanup;
		}
		c.family = (uint8_t)family;
		c.state = (uint8_t)st;
		rc = set_push(set, &c);
		if (rc) {
			es_errf(rc, err, errsz, "%s: out of memory", path);
			goto cleanup;
		}
	}
	if (ferror(f))
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: read error", path);
cleanup:
	fclose(f);
	return rc;
}

/* Orders by 4-tuple; the state is not part of the identity. */
static int conn_cmp(const void *a, const void *b)
{
	const es_kcprocfs_tcp_conn *x = a, *y = b;
	int r;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->sport != y->sport)
		return x->sport < y->sport ? -1 : 1;
	if (x->dport != y->dport)
		return x->dport < y->dport ? -1 : 1;
	r = memcmp(x->saddr, y->saddr, 16);
	if (r)
		return r;
	return memcmp(x->daddr, y->daddr, 16);
}

static int live(const es_kcprocfs_tcp_conn *c)
{
	return c->state != ES_KCP_TCP_LISTEN && c->state != ES_KCP_TCP_TIME_WAIT &&
	       c->state != ES_KCP_TCP_CLOSE;
}

static int port_listens(const es_kcprocfs_tcp_set *s, uint16_t port)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].state == ES_KCP_TCP_LISTEN && s->v[i].sport == port)
			return 1;
	return 0;
}

void es_kcprocfs_tcp_diff(es_kcprocfs_tcp_set *prev, es_kcprocfs_tcp_set *cur,
			  es_kcprocfs_tcp_delta *d)
{
	size_t i = 0, j = 0;

	memset(d, 0, sizeof(*d));
	if (prev->n)
		qsort(prev->v, prev->n, sizeof(*prev->v), conn_cmp);
	if (cur->n)
		qsort(cur->v, cur->n, sizeof(*cur->v), conn_cmp);
	for (j = 0; j < cur->n; j++)
		d->states[cur->v[j].state <= ES_KCP_TCP_STATE_MAX ? cur->v[j].state : 0]++;
	j = 0;
	while (i < prev->n || j < cur->n) {
		const es_kcprocfs_tcp_conn *p = i < prev->n ? &prev->v[i] : NULL;
		const es_kcprocfs_tcp_conn *c = j < cur->n ? &cur->v[j] : NULL;
		int r = !p ? 1 : !c ? -1 : conn_cmp(p, c);
		int plive = p && r <= 0 && live(p), clive = c && r >= 0 && live(c);

		if (plive && !clive)
			d->closed++;
		if (clive && !plive) {
			if (port_listens(cur, c->sport) || port_listens(prev, c->sport))
				d->accepted++;
			else
				d->opened++;
		}
		if (r <= 0)
			i++;
		if (r >= 0)
			j++;
	}
}

const char *es_kcprocfs_tcp_state_str(unsigned state)
{
	static const char *const names[] = {
		"UNKNOWN", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
		"FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK",
		"LISTEN", "CLOSING", "NEW_SYN_RECV",
	};

	return state <= ES_KCP_TCP_STATE_MAX ? names[state] : names[0];
}

es_err es_kcprocfs_vmstat_oom_kill(const char *path, uint64_t *out, char *err,
				   size_t errsz)
{
	char line[LINE_MAX_LEN], *end;
	es_err rc = ES_ERR_NOTFOUND;
	unsigned long long v;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "oom_kill ", 9) != 0)
			continue;
		errno = 0;
		v = strtoull(line + 9, &end, 10);
		if (errno || end == line + 9 || (*end != '\n' && *end != '\0') ||
		    line[9] == '-') {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "%s: oom_kill is not a number", path);
			goto cleanup;
		}
		*out = v;
		rc = ES_OK;
		goto cleanup;
	}
	es_errf(rc, err, errsz, "%s: no oom_kill counter", path);
cleanup:
	fclose(f);
	return rc;
}

es_err es_kcprocfs_diskstats_read(const char *path, es_kcprocfs_disk **out,
				  size_t *n, char *err, size_t errsz)
{
	char line[LINE_MAX_LEN], name[64];
	es_kcprocfs_disk *v = NULL, *nv, d;
	size_t cnt = 0, cap = 0;
	unsigned long long f[11];
	unsigned lineno = 0;
	es_err rc = ES_OK;
	int nf, after = 0;
	FILE *fp;

	*out = NULL;
	*n = 0;
	fp = fopen(path, "re");
	if (!fp)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%u: line too long", path, lineno);
			goto cleanup;
		}
		memset(&d, 0, sizeof(d));
		nf = sscanf(line, " %u %u %63s%n %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			    &d.major, &d.minor, name, &after, &f[0], &f[1], &f[2], &f[3], &f[4],
			    &f[5], &f[6], &f[7], &f[8], &f[9], &f[10]);
		if (nf != 14 || strlen(name) >= sizeof(d.name) || strchr(line + after, '-')) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "%s:%u: not a diskstats row", path, lineno);
			goto cleanup;
		}
		memcpy(d.name, name, strlen(name) + 1);
		d.reads = f[0];
		d.read_ms = f[3];
		d.writes = f[4];
		d.write_ms = f[7];
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
				goto cleanup;
			}
			v = nv;
		}
		v[cnt++] = d;
	}
	if (ferror(fp))
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: read error", path);
cleanup:
	fclose(fp);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = cnt;
	return ES_OK;
}
