/*
 * ca_cli.h - `edgesync-controller ca init` and `ca hash` (README, "Joining
 * nodes").
 */
#ifndef ES_CTRL_CA_CLI_H
#define ES_CTRL_CA_CLI_H

/*
 * Runs `ca SUBCOMMAND` with argv[0] the program, argv[1] "ca":
 *   ca init [--state-dir DIR] [--ca-cert FILE] [--ca-key FILE] [--trust-domain TD]
 *       makes a signing CA (es_ca_create; default files
 *       <state-dir>/ca/ca.crt and ca.key, the directory made 0700) and
 *       prints the files, its pin for `edgesync-agent join --ca-hash`, and
 *       the settings that use it;
 *   ca hash FILE
 *       prints the pin of each CA certificate in the PEM file.
 * Returns the exit status: 0; 1 (init cannot write; out of memory); 2
 * (usage, a CA exists already, or a hash FILE that cannot be read, is
 * not PEM or holds no CA: stderr names the file and the reason, the
 * system's for a file that cannot be read, "cannot read FILE: No such
 * file or directory").
 */
int es_ca_cli_main(int argc, char **argv);

#endif
