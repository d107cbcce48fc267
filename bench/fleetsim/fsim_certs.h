/*
 * fsim_certs.h - the simulated nodes' client certificates: one ECDSA P-256
 * key and certificate per node, with the SPIFFE ID
 * spiffe://<trust-domain>/node/<name> as its one URI SAN (proto/PROTOCOL.md,
 * "Transport"), issued with es_pki by the CA given as files, and kept in a
 * cache directory so a second run reuses them.
 */
#ifndef FSIM_CERTS_H
#define FSIM_CERTS_H

#include <stddef.h>
#include "es_err.h"

/* Name of simulated node idx: "<prefix>-<idx, 5 digits at least>". */
void fsim_node_name(const char *prefix, int idx, char *out, size_t outsz);

/*
 * Makes sure cache_dir/<CA>/<name>.crt and .key exist for the nodes
 * first..first+n-1, where <CA> is the first 16 hex digits of the SHA-256 of the CA
 * certificate file (a new CA gets new certificates; old ones stay). Issues
 * the missing ones with the CA at ca_crt/ca_key (PEM files), valid for 10
 * years, clientAuth. Sets dir_out to the certificate directory and
 * *issued to how many were made now. The cache is not written durably
 * (no fsync): a crash leaves a file that is reissued or refused by TLS.
 * Errors: ES_ERR_IO (a file unreadable or unwritable, err names it),
 * ES_ERR_INVAL (a node name that is not an RFC 1123 subdomain), and those of
 * es_pki_issue.
 */
es_err fsim_certs_ensure(const char *cache_dir, const char *ca_crt, const char *ca_key,
			 const char *trust_domain, const char *prefix, int first, int n,
			 char *dir_out, size_t dirsz, int *issued, char *err,
			 size_t errsz);

#endif
