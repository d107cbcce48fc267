/*
 * es_cli.c - command-line and signal helpers of the daemons (es_cli.h).
 */
#include "es_cli.h"

#include <signal.h>
#include <string.h>

#include "es_version.h"

int es_cli_common(int argc, char **argv, const char *prog, es_cli_usage_fn usage)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("%s %s\n", prog, ES_VERSION);
		return 0;
	}
	return -1;
}

int es_cli_has_help(int argc, char **argv, int first)
{
	int i;

	for (i = first; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

es_err es_cli_signals(void (*on_stop)(int sig))
{
	struct sigaction sa;

	if (!on_stop)
		return ES_ERR_INVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
		return ES_ERR_IO;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return ES_ERR_IO;
	return ES_OK;
}
