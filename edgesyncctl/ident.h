/*
 * ident.h - what edgesyncctl tells an operator whose certificate the admin
 * API refused (HTTP 403 Forbidden): which certificate it sent and what
 * identity the controller expects (controller/net/server_admin.c checks
 * it with es_pki_check_peer, ES_ID_ADMIN).
 */
#ifndef ES_CTL_IDENT_H
#define ES_CTL_IDENT_H

#include <stddef.h>
#include <stdio.h>
#include "es_err.h"

/*
 * Describes the first certificate of the PEM file path into buf (bufsz
 * bytes, NUL-terminated, cut to fit): "subject CN=node-1, SPIFFE ID
 * spiffe://edgesync.local/node/node-1" (each URI subjectAltName, or "no
 * URI subjectAltName"). Errors: ES_ERR_INVAL (path NULL), ES_ERR_PARSE
 * (the file cannot be read or holds no certificate; buf says so),
 * ES_ERR_NOMEM.
 */
es_err es_ctl_ident_describe(const char *path, char *buf, size_t bufsz);

/*
 * Writes to f, after a 403 from the admin API, what was sent and what is
 * expected: the certificate file cert (NULL: none was sent) with
 * es_ctl_ident_describe's text, that the admin API accepts a client
 * certificate that chains to the controller's client-ca with exactly one
 * URI SAN spiffe://<trust-domain>/admin/<name> (README, "Admin
 * identities"), and the settings that choose it. Each of the agent's and
 * controller's variables EDGESYNC_CERT, EDGESYNC_KEY, EDGESYNC_CA and
 * EDGESYNC_SERVER set in the environment is named as not read by
 * edgesyncctl, with its EDGESYNCCTL_ name.
 */
void es_ctl_ident_forbidden_hint(FILE *f, const char *cert);

#endif
