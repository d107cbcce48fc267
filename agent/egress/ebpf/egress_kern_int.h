/*
 * egress_kern_int.h - what egress_kern.c (load, pin, attach, repair,
 * remove) shares with egress_kern_sets.c (writing, switching and reading
 * the rule sets, counters). Private to the egress_kern module.
 */
#ifndef ES_AGENT_EGRESS_KERN_INT_H
#define ES_AGENT_EGRESS_KERN_INT_H

#include <stdint.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "egress/ebpf/egress_kern.h"

struct egress_bpf; /* the skeleton, egress.skel.h */

#define NMAPS 6
/* Indexes of maps[] and map_id[]. */
#define MAP_LPM 0
#define MAP_TGT 1
#define MAP_CFG 2
#define MAP_POL 3
#define MAP_ACTIVE 4
#define MAP_VIOL 5

struct es_egk {
	struct egress_bpf *skel;
	char dir[512];
	int cg_fd;                  /* the cgroup v2 root, O_RDONLY */
	int link_fd[ES_EGK_HOOKS];
	uint32_t link_id[ES_EGK_HOOKS];
	struct bpf_map *maps[NMAPS];
	uint32_t map_id[NMAPS];
	struct timespec last_switch;
};

#endif
