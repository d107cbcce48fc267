/*
 * ctl.h - edgesyncctl's subcommands over the admin API (controller/api/admin.h):
 * apply, get, describe, delete, version. main.c only calls es_ctl_main.
 */
#ifndef ES_CTL_CTL_H
#define ES_CTL_CTL_H

/* Exit statuses of edgesyncctl. */
#define ES_CTL_EXIT_OK 0
#define ES_CTL_EXIT_RUNTIME 1 /* the server refused, not found, network/TLS */
#define ES_CTL_EXIT_USAGE 2   /* unknown subcommand or flag, bad config: server URL,
                                 unreadable/invalid/mismatched cert, key or ca
                                 file, unreadable or malformed manifest */

/* Default admin API URL: the controller's default admin-listen address. */
#define ES_CTL_DEFAULT_SERVER "https://127.0.0.1:7444"

/*
 * Runs edgesyncctl with argv (argv[0] the program name). Settings (server,
 * cert, key, ca) come from defaults, then the config file (--config FILE,
 * else $EDGESYNCCTL_CONFIG, else ~/.config/edgesync/edgesyncctl.conf when it
 * exists), then EDGESYNCCTL_SERVER/_CERT/_KEY/_CA (never the agent's and
 * controller's EDGESYNC_ ones), then --server/--cert/--key/--ca. Results go
 * to stdout, errors to stderr as "error: ..."; after a 403 from the admin
 * API, or a TLS failure without a cert, what was sent and what is expected
 * (ident.h).
 * Returns an ES_CTL_EXIT_* status.
 */
int es_ctl_main(int argc, char **argv);

#endif
