/*
 * es_pki_int.h - private to es_pki.c and es_pki_dev.c; not a public
 * interface (lib/es_pki.h is).
 */
#ifndef ES_PKI_INT_H
#define ES_PKI_INT_H

#include <stddef.h>
#include <time.h>
#include <mbedtls/x509_crt.h>
#include "es_err.h"

/* Longest URI SAN looked at (SPIFFE X509-SVID caps IDs at 2048 bytes). */
#define ES_PKI__URI_MAX 2048
/* X.520 ub-common-name. */
#define ES_PKI__CN_MAX 64

/* Number of entries before the NULL terminator of l; 0 when l is NULL. */
size_t es_pki__list_len(const char *const *l);

/* es_pki_check_validity on a parsed certificate: ES_OK, or ES_ERR_AUTH
 * with why set. */
es_err es_pki__crt_validity(const mbedtls_x509_crt *crt, time_t now,
			    char *why, size_t whysz);

/* The certificate's notAfter as Unix seconds (UTC). */
time_t es_pki__crt_not_after(const mbedtls_x509_crt *crt);

#endif
