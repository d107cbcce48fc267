/*
 * heap.h - giving freed heap memory back to the kernel at the agent's
 * quiet points, so that its resident set between rounds is what it holds
 * rather than its last peak: the steady-state figure bench/footprint.py
 * measures is what the DaemonSet's memory request is sized from
 * (packaging/kubernetes/agent-daemonset.yaml).
 */
#ifndef ES_AGENT_HEAP_H
#define ES_AGENT_HEAP_H

/*
 * Releases free heap pages: glibc's malloc_trim(0), which also returns whole
 * free pages inside the heap (madvise MADV_DONTNEED), not only its top. A
 * no-op with C libraries that have no malloc_trim (musl, whose allocator
 * returns memory as it frees). Call after a burst of transient allocations
 * (a collection round, a report built); it costs a walk of malloc's free
 * lists. No errors.
 */
void es_heap_trim(void);

#endif
