/*
 * es-urlorder - prints the targets given in the order a node named NODE
 * dials them with controller-order = node (es_urllist_order), one a line,
 * so that an integration test knows which controller an agent starts at.
 *
 * Exit status: 0 printed, 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "es_urllist.h"

int main(int argc, char **argv)
{
	size_t order[ES_URLLIST_MAX];

	if (argc < 3 || argc - 2 > ES_URLLIST_MAX) {
		fprintf(stderr, "usage: es-urlorder NODE TARGET... (at most %d targets)\n",
			ES_URLLIST_MAX);
		return 2;
	}
	es_urllist_order(argv[1], (const char *const *)(argv + 2), (size_t)(argc - 2),
			 order);
	for (int i = 0; i < argc - 2; i++)
		printf("%s\n", argv[2 + order[i]]);
	return 0;
}
