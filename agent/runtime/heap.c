/*
 * heap.c - giving freed heap back to the kernel (heap.h).
 */
#include "runtime/heap.h"

#include <stdlib.h> /* defines __GLIBC__ on glibc (features.h) */
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void es_heap_trim(void)
{
#if defined(__GLIBC__)
	(void)malloc_trim(0);
#endif
}
