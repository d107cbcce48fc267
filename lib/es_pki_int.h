/*
 * es_pki_int.h - private to es_pki.c and es_pki_dev.c; not a public
 * interface (lib/es_pki.h is).
 */
#ifndef ES_PKI_INT_H
#define ES_PKI_INT_H

#include <stddef.h>

/* Longest URI SAN looked at (SPIFFE X509-SVID caps IDs at 2048 bytes). */
#define ES_PKI__URI_MAX 2048
/* X.520 ub-common-name. */
#define ES_PKI__CN_MAX 64

/* Number of entries before the NULL terminator of l; 0 when l is NULL. */
size_t es_pki__list_len(const char *const *l);

#endif
