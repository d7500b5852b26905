/*
 * gpus.c: the GPUs the cuda backend would use on this machine
 * (kf_farm_gpu_count, farm.h), for the local farm's slots and a Redis farm
 * worker's inventory alike.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/backend.h>
#include <kforge/farm.h>

int kf_farm_gpu_count(void)
{
	const struct kf_backend_ops *ops = kf_backend_find("cuda");
	if (!ops || (ops->available && ops->available(NULL) != 0))
		return 0;
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	int n = 0;
	if (vis) {
		/* The runtime stops at the first entry it cannot use; count
		 * the entries, which is what a pin can index. */
		for (const char *p = vis; *p;) {
			size_t k = strcspn(p, ",");
			if (k)
				n++;
			p += k + (p[k] == ',');
		}
		return n;
	}
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	return n > 0 ? n : 1; /* available, but not listed: one */
}
