/*
 * main.c - edgesyncctl, the operator's command line (ctl.h).
 */
#include "ctl.h"

int main(int argc, char **argv)
{
	return es_ctl_main(argc, argv);
}
