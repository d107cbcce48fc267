/*
 * es_cli.h - what the daemons' main.c files share: the leading help and
 * version commands, and the signals of a long-running process.
 */
#ifndef ES_CLI_H
#define ES_CLI_H

#include <stdio.h>
#include "es_err.h"

/* Prints a program's usage text to f. */
typedef void (*es_cli_usage_fn)(FILE *f);

/*
 * Handles the commands every edgesync program answers the same way, given
 * main's argc/argv (argv[1] is the command):
 *   no command                   usage on stderr, returns 2;
 *   --help, -h, help             usage on stdout, returns 0;
 *   --version, version           "<prog> <ES_VERSION>" on stdout, returns 0.
 * prog (static text) and usage must not be NULL. Returns -1 when argv[1] is
 * another command, which the caller dispatches.
 */
int es_cli_common(int argc, char **argv, const char *prog, es_cli_usage_fn usage);

/* 1 when one of argv[first..argc-1] is --help or -h, else 0. */
int es_cli_has_help(int argc, char **argv, int first);

/*
 * Makes SIGINT and SIGTERM call on_stop (which must be async-signal-safe:
 * set a sig_atomic_t flag or wake an event loop) and ignores SIGPIPE, so a
 * peer that closes a socket mid-write gives EPIPE instead of killing the
 * process. Errors: ES_ERR_INVAL (on_stop NULL), ES_ERR_IO (sigaction
 * refused; errno kept).
 */
es_err es_cli_signals(void (*on_stop)(int sig));

#endif
