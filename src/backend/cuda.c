/*
 * cuda.c: the cuda backend. The CUDA driver, NVRTC, NVML and CUPTI are
 * opened at run time (dlopen), so one binary runs with and without a GPU.
 * The engine's own kernels (inputs, poison, comparisons, hashes) are built
 * by NVRTC from cuda_kernels.h and cached; candidates share the device's
 * primary context with the engine and run on the engine's stream.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/backend.h>

#include "cuda_kernels.h"

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#define KF_HAVE_CUPTI 1
#endif

/* The driver API subset we call, declared here so that no CUDA header is
 * needed to build. Values are those of cuda.h (stable ABI). */
typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef struct cu_mod_st *cu_module;
typedef struct cu_func_st *cu_function;
typedef struct cu_stream_st *cu_stream;
typedef struct cu_event_st *cu_event;
typedef unsigned long long cu_ptr;
/* CUipcMemHandle: passed by value to cuIpcOpenMemHandle. */
struct cu_ipc_handle {
	char reserved[64];
};

enum {
	CU_ATTR_CLOCK_KHZ = 13,
	CU_ATTR_SM_COUNT = 16,
	CU_ATTR_MEM_CLOCK_KHZ = 36,
	CU_ATTR_BUS_WIDTH = 37,
	CU_ATTR_L2_BYTES = 38,
	CU_ATTR_CC_MAJOR = 75,
	CU_ATTR_CC_MINOR = 76,
};

struct driver {
	void *so;
	cu_result (*init)(unsigned);
	cu_result (*driver_version)(int *);
	cu_result (*device_get)(cu_device *, int);
	cu_result (*device_count)(int *);
	cu_result (*device_name)(char *, int, cu_device);
	cu_result (*device_attr)(int *, int, cu_device);
	cu_result (*device_mem)(size_t *, cu_device);
	cu_result (*device_pci)(char *, int, cu_device);
	cu_result (*primary_retain)(cu_context *, cu_device);
	cu_result (*primary_release)(cu_device);
	cu_result (*ctx_set)(cu_context);
	cu_result (*ctx_sync)(void);
	cu_result (*stream_create)(cu_stream *, unsigned);
	cu_result (*stream_destroy)(cu_stream);
	cu_result (*mem_alloc)(cu_ptr *, size_t);
	cu_result (*mem_free)(cu_ptr);
	cu_result (*ipc_get)(void *, cu_ptr);
	cu_result (*ipc_open)(cu_ptr *, struct cu_ipc_handle, unsigned);
	cu_result (*ipc_close)(cu_ptr);
	cu_result (*dtoh)(void *, cu_ptr, size_t);
	cu_result (*htod)(cu_ptr, const void *, size_t);
	cu_result (*dtod_async)(cu_ptr, cu_ptr, size_t, cu_stream);
	cu_result (*memset32_async)(cu_ptr, unsigned, size_t, cu_stream);
	cu_result (*module_load)(cu_module *, const void *);
	cu_result (*module_func)(cu_function *, cu_module, const char *);
	cu_result (*launch)(cu_function, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, unsigned, cu_stream, void **,
			    void **);
	cu_result (*event_create)(cu_event *, unsigned);
	cu_result (*event_record)(cu_event, cu_stream);
	cu_result (*event_sync)(cu_event);
	cu_result (*event_elapsed)(float *, cu_event, cu_event);
	cu_result (*ctx_limit)(size_t *, int);
	cu_result (*ctx_cache_config)(int *);
	cu_result (*stream_attr)(cu_stream, int, void *);
	cu_result (*error_name)(cu_result, const char **);
	cu_result (*error_string)(cu_result, const char **);
	/* Optional (NULL on drivers without the stream-ordered
	 * allocator). */
	cu_result (*mem_alloc_async)(cu_ptr *, size_t, cu_stream);
	cu_result (*mem_free_async)(cu_ptr, cu_stream);
};

/* NVRTC, for the engine's kernels. */
struct nvrtc {
	void *so;
	int (*version)(int *, int *);
	int (*create)(void **, const char *, const char *, int,
		      const char *const *, const char *const *);
	int (*compile)(void *, int, const char *const *);
	int (*log_size)(void *, size_t *);
	int (*log)(void *, char *);
	int (*cubin_size)(void *, size_t *);
	int (*cubin)(void *, char *);
	int (*destroy)(void **);
};

/* NVML, for clocks, throttling and energy. */
struct nvml {
	void *so;
	void *dev;
	int (*init)(void);
	int (*by_pci)(const char *, void **);
	int (*clock)(void *, int, unsigned *);
	int (*max_clock)(void *, int, unsigned *);
	int (*reasons)(void *, unsigned long long *);
	int (*energy)(void *, unsigned long long *);
	int (*driver)(char *, unsigned);
};

#define NVML_CLOCK_SM 1
/* Slowdowns that make a sample unrepresentative: software power cap,
 * hardware slowdown, thermal limits, power brake. */
#define NVML_THROTTLED 0x00000000000000E4ull

struct cuda {
	struct driver d;
	struct nvrtc r;
	struct nvml n;
	cu_device dev;
	cu_context ctx;
	cu_stream stream;
	cu_module mod;
	cu_function f_fill, f_poison, f_compare, f_worst, f_checksum, f_nudge;
	cu_event ev0, ev1;
	cu_ptr flush_buf;
	size_t flush_bytes;
	cu_ptr flush_target; /* the worker's, once flush_into named it */
	uint32_t flush_value;
	cu_ptr scratch; /* a stats block and a checksum word */
	int sm_count, cc_major, cc_minor;
	uint64_t hash_key;
	char name[256];
	bool cupti;
};

/* CUPTI's activity buffers arrive through callbacks without a context
 * argument, hence this one piece of static state (one device per worker). */
#ifdef KF_HAVE_CUPTI
static struct {
	void *so;
	CUptiResult (*register_cb)(CUpti_BuffersCallbackRequestFunc,
				   CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*timestamp)(uint64_t *);
	CUptiResult (*stream_id)(CUcontext, CUstream, uint32_t *);
	/* What the last window saw. */
	uint64_t t0;
	/* The engine's flush is issued inside the window (so that the device
	 * goes straight from it to the candidate) and left out of the span. */
	uint32_t engine_stream;
	uint64_t flush_bytes;
	bool flush_pending;
	bool drained; /* nothing traced since the last call's drain */
	uint64_t first_start, last_end;
	int activities;
	uint32_t streams[16];
	int n_streams;
} cupti;
#endif

#define LOAD(lib, field, name)                                                 \
	(*(void **)&(lib)->field = dlsym((lib)->so, name))

static const char *cu_err(struct cuda *c, cu_result r)
{
	const char *s = NULL;
	if (c->d.error_name)
		c->d.error_name(r, &s);
	return s ? s : "CUDA error";
}

/* Sticky errors: the context is lost and only a new process recovers. */
static bool sticky(cu_result r)
{
	return r == 700 || r == 701 || r == 702 || r == 214 || r == 215 ||
	       r == 719 || r == 999;
}

#define CU(c, call, err, what)                                                 \
	do {                                                                   \
		cu_result r_ = (call);                                         \
		if (r_ != 0)                                                   \
			return kf_err_set(                                     \
			    err, sticky(r_) ? KF_EFAULT : KF_EIO,              \
			    "%s: %s (%d)", what, cu_err(c, r_), r_);           \
	} while (0)

static void *open_first(const char *const *names)
{
	for (; *names; names++) {
		void *so = dlopen(*names, RTLD_NOW | RTLD_GLOBAL);
		if (so)
			return so;
	}
	return NULL;
}

static int open_driver(struct driver *d, struct kf_err *err)
{
	static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
	d->so = open_first(names);
	if (!d->so)
		return kf_err_set(err, KF_ENOSYS,
				  "cuda backend: no NVIDIA driver "
				  "(libcuda.so.1 not found)");
	bool ok = LOAD(d, init, "cuInit") &&
		  LOAD(d, driver_version, "cuDriverGetVersion") &&
		  LOAD(d, device_get, "cuDeviceGet") &&
		  LOAD(d, device_count, "cuDeviceGetCount") &&
		  LOAD(d, device_name, "cuDeviceGetName") &&
		  LOAD(d, device_attr, "cuDeviceGetAttribute") &&
		  LOAD(d, device_mem, "cuDeviceTotalMem_v2") &&
		  LOAD(d, device_pci, "cuDeviceGetPCIBusId") &&
		  LOAD(d, primary_retain, "cuDevicePrimaryCtxRetain") &&
		  LOAD(d, primary_release, "cuDevicePrimaryCtxRelease_v2") &&
		  LOAD(d, ctx_set, "cuCtxSetCurrent") &&
		  LOAD(d, ctx_sync, "cuCtxSynchronize") &&
		  LOAD(d, stream_create, "cuStreamCreate") &&
		  LOAD(d, stream_destroy, "cuStreamDestroy_v2") &&
		  LOAD(d, mem_alloc, "cuMemAlloc_v2") &&
		  LOAD(d, mem_free, "cuMemFree_v2") &&
		  LOAD(d, ipc_get, "cuIpcGetMemHandle") &&
		  LOAD(d, ipc_open, "cuIpcOpenMemHandle_v2") &&
		  LOAD(d, ipc_close, "cuIpcCloseMemHandle") &&
		  LOAD(d, dtoh, "cuMemcpyDtoH_v2") &&
		  LOAD(d, htod, "cuMemcpyHtoD_v2") &&
		  LOAD(d, dtod_async, "cuMemcpyDtoDAsync_v2") &&
		  LOAD(d, memset32_async, "cuMemsetD32Async") &&
		  LOAD(d, module_load, "cuModuleLoadData") &&
		  LOAD(d, module_func, "cuModuleGetFunction") &&
		  LOAD(d, launch, "cuLaunchKernel") &&
		  LOAD(d, event_create, "cuEventCreate") &&
		  LOAD(d, event_record, "cuEventRecord") &&
		  LOAD(d, event_sync, "cuEventSynchronize") &&
		  LOAD(d, event_elapsed, "cuEventElapsedTime_v2") &&
		  LOAD(d, ctx_limit, "cuCtxGetLimit") &&
		  LOAD(d, ctx_cache_config, "cuCtxGetCacheConfig") &&
		  LOAD(d, stream_attr, "cuStreamGetAttribute") &&
		  LOAD(d, error_name, "cuGetErrorName") &&
		  LOAD(d, error_string, "cuGetErrorString");
	if (!ok)
		return kf_err_set(err, KF_ENOSYS,
				  "cuda backend: the driver lacks a function "
				  "kforge needs: %s",
				  dlerror());
	if (!LOAD(d, mem_alloc_async, "cuMemAllocAsync") ||
	    !LOAD(d, mem_free_async, "cuMemFreeAsync"))
		d->mem_alloc_async = NULL;
	return 0;
}

static int cuda_available(struct kf_err *err)
{
	struct driver d;
	memset(&d, 0, sizeof(d));
	int rc = open_driver(&d, err);
	int n = 0;
	if (!rc && d.init(0) != 0)
		rc = kf_err_set(err, KF_ENOSYS,
				"cuda backend: cuInit failed (no usable GPU)");
	if (!rc && (d.device_count(&n) != 0 || n == 0))
		rc = kf_err_set(err, KF_ENOSYS,
				"cuda backend: no CUDA device found");
	/* The driver stays loaded: unloading it is not supported. */
	return rc;
}

static int open_nvrtc(struct nvrtc *r, struct kf_err *err)
{
	static const char *const names[] = {
	    "libnvrtc.so.13",
	    "libnvrtc.so.12",
	    "libnvrtc.so",
	    "/usr/local/cuda/lib64/libnvrtc.so.13",
	    "/usr/local/cuda/lib64/libnvrtc.so.12",
	    "/usr/local/cuda/lib64/libnvrtc.so",
	    NULL,
	};
	r->so = open_first(names);
	if (!r->so)
		return kf_err_set(err, KF_ENOSYS,
				  "cuda backend: NVRTC not found (libnvrtc.so; "
				  "install the CUDA toolkit)");
	bool ok = LOAD(r, version, "nvrtcVersion") &&
		  LOAD(r, create, "nvrtcCreateProgram") &&
		  LOAD(r, compile, "nvrtcCompileProgram") &&
		  LOAD(r, log_size, "nvrtcGetProgramLogSize") &&
		  LOAD(r, log, "nvrtcGetProgramLog") &&
		  LOAD(r, cubin_size, "nvrtcGetCUBINSize") &&
		  LOAD(r, cubin, "nvrtcGetCUBIN") &&
		  LOAD(r, destroy, "nvrtcDestroyProgram");
	if (!ok)
		return kf_err_set(err, KF_ENOSYS,
				  "cuda backend: NVRTC lacks a function: %s",
				  dlerror());
	return 0;
}

static void open_nvml(struct cuda *c)
{
	static const char *const names[] = {"libnvidia-ml.so.1",
					    "libnvidia-ml.so", NULL};
	struct nvml *n = &c->n;
	char pci[64];
	n->so = open_first(names);
	if (!n->so)
		return;
	bool ok = LOAD(n, init, "nvmlInit_v2") &&
		  LOAD(n, by_pci, "nvmlDeviceGetHandleByPciBusId_v2") &&
		  LOAD(n, clock, "nvmlDeviceGetClockInfo") &&
		  LOAD(n, max_clock, "nvmlDeviceGetMaxClockInfo") &&
		  LOAD(n, energy, "nvmlDeviceGetTotalEnergyConsumption") &&
		  LOAD(n, driver, "nvmlSystemGetDriverVersion");
	if (!LOAD(n, reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
		LOAD(n, reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!ok || n->init() != 0 ||
	    c->d.device_pci(pci, sizeof(pci), c->dev) != 0 ||
	    n->by_pci(pci, &n->dev) != 0)
		n->dev = NULL;
}

#ifdef KF_HAVE_CUPTI
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	*size = 1u << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static void note_activity(uint64_t start, uint64_t end, uint32_t stream)
{
	if (start < cupti.t0)
		return; /* before the window: the flush, the poison */
	if (!cupti.activities || start < cupti.first_start)
		cupti.first_start = start;
	if (end > cupti.last_end)
		cupti.last_end = end;
	cupti.activities++;
	for (int i = 0; i < cupti.n_streams; i++)
		if (cupti.streams[i] == stream)
			return;
	if (cupti.n_streams < 16)
		cupti.streams[cupti.n_streams++] = stream;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id,
				      uint8_t *buffer, size_t size,
				      size_t valid)
{
	(void)ctx;
	(void)stream_id;
	(void)size;
	CUpti_Activity *rec = NULL;
	while (cupti.next(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
		    rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			CUpti_ActivityKernel10 *k = (void *)rec;
			note_activity(k->start, k->end, k->streamId);
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			CUpti_ActivityMemcpy6 *m = (void *)rec;
			note_activity(m->start, m->end, m->streamId);
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
			CUpti_ActivityMemset4 *m = (void *)rec;
			if (cupti.flush_pending && m->start >= cupti.t0 &&
			    m->streamId == cupti.engine_stream &&
			    m->bytes == cupti.flush_bytes) {
				cupti.flush_pending = false;
				continue;
			}
			note_activity(m->start, m->end, m->streamId);
		}
	}
	free(buffer);
}

static bool open_cupti(void)
{
	static const char *const names[] = {
	    "libcupti.so.13",
	    "libcupti.so",
	    "/usr/local/cuda/lib64/libcupti.so.13",
	    "/usr/local/cuda/lib64/libcupti.so",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	    NULL,
	};
	if (getenv("KFORGE_NO_CUPTI"))
		return false;
	cupti.so = open_first(names);
	if (!cupti.so)
		return false;
	bool ok = LOAD(&cupti, register_cb, "cuptiActivityRegisterCallbacks") &&
		  LOAD(&cupti, enable, "cuptiActivityEnable") &&
		  LOAD(&cupti, flush_all, "cuptiActivityFlushAll") &&
		  LOAD(&cupti, next, "cuptiActivityGetNextRecord") &&
		  LOAD(&cupti, timestamp, "cuptiGetTimestamp") &&
		  LOAD(&cupti, stream_id, "cuptiGetStreamId");
	if (!ok || cupti.register_cb(buffer_requested, buffer_completed) !=
		       CUPTI_SUCCESS)
		return false;
	return cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ==
		   CUPTI_SUCCESS &&
	       cupti.enable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS &&
	       cupti.enable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS;
}
#endif

/* The engine's kernels as a cubin for this device: from the cache, or
 * built by NVRTC and stored there. Caller frees *cubin. */
static int engine_cubin(struct cuda *c, char **cubin, size_t *bytes,
			struct kf_err *err)
{
	int major = 0, minor = 0, rc = 0;
	char arch[64], hex[65];
	struct kf_sha256 h;
	c->r.version(&major, &minor);
	snprintf(arch, sizeof(arch), "--gpu-architecture=sm_%d%d", c->cc_major,
		 c->cc_minor);
	kf_sha256_init(&h);
	kf_sha256_update(&h, KF_CUDA_SOURCE, strlen(KF_CUDA_SOURCE));
	kf_sha256_update(&h, arch, strlen(arch));
	kf_sha256_update(&h, &major, sizeof(major));
	kf_sha256_update(&h, &minor, sizeof(minor));
	kf_sha256_final_hex(&h, hex);
	char *dir = kf_path_join(kf_cache_dir(), "cuda");
	char *name = kf_xasprintf("engine-%.32s.cubin", hex);
	char *path = kf_path_join(dir, name);
	free(name);
	if (!kf_file_read(path, 64u << 20, cubin, bytes, NULL))
		goto out;
	void *prog = NULL;
	const char *opts[] = {arch, "--std=c++17"};
	if (c->r.create(&prog, KF_CUDA_SOURCE, "kforge_engine.cu", 0, NULL,
			NULL) != 0) {
		rc = kf_err_set(err, KF_EIO, "NVRTC: cannot create a program");
		goto out;
	}
	if (c->r.compile(prog, 2, opts) != 0) {
		size_t n = 0;
		c->r.log_size(prog, &n);
		char *log = kf_xcalloc(1, n + 1);
		c->r.log(prog, log);
		rc = kf_err_set(err, KF_EIO,
				"NVRTC: the engine's kernels do not "
				"compile: %.800s",
				log);
		free(log);
		c->r.destroy(&prog);
		goto out;
	}
	c->r.cubin_size(prog, bytes);
	*cubin = kf_xmalloc(*bytes);
	c->r.cubin(prog, *cubin);
	c->r.destroy(&prog);
	/* A cache that cannot be written only costs the next worker time. */
	if (!kf_mkdir_p(dir, NULL))
		kf_file_write_atomic(path, *cubin, *bytes, NULL);
out:
	free(dir);
	free(path);
	return rc;
}

static int cuda_init(void **ctxp, struct kf_err *err)
{
	struct cuda *c = kf_xcalloc(1, sizeof(*c));
	const char *ord = getenv("KFORGE_DEVICE");
	char *cubin = NULL;
	size_t cubin_bytes = 0;
	int l2 = 0, rc;
	*ctxp = c;
	rc = open_driver(&c->d, err);
	if (rc)
		return rc;
	CU(c, c->d.init(0), err, "cuInit");
	CU(c, c->d.device_get(&c->dev, ord ? atoi(ord) : 0), err,
	   "cuDeviceGet");
	c->d.device_name(c->name, sizeof(c->name), c->dev);
	c->d.device_attr(&c->sm_count, CU_ATTR_SM_COUNT, c->dev);
	c->d.device_attr(&c->cc_major, CU_ATTR_CC_MAJOR, c->dev);
	c->d.device_attr(&c->cc_minor, CU_ATTR_CC_MINOR, c->dev);
	c->d.device_attr(&l2, CU_ATTR_L2_BYTES, c->dev);
#ifdef KF_HAVE_CUPTI
	/* CUPTI before the context, so that it sees every activity. */
	c->cupti = open_cupti();
#endif
	CU(c, c->d.primary_retain(&c->ctx, c->dev), err,
	   "cuDevicePrimaryCtxRetain");
	CU(c, c->d.ctx_set(c->ctx), err, "cuCtxSetCurrent");
	/* A blocking stream: work a candidate puts on the legacy default
	 * stream is ordered with it. */
	CU(c, c->d.stream_create(&c->stream, 0), err, "cuStreamCreate");
#ifdef KF_HAVE_CUPTI
	if (c->cupti && cupti.stream_id((CUcontext)c->ctx, (CUstream)c->stream,
					&cupti.engine_stream) != CUPTI_SUCCESS)
		c->cupti = false;
#endif
	CU(c, c->d.event_create(&c->ev0, 0), err, "cuEventCreate");
	CU(c, c->d.event_create(&c->ev1, 0), err, "cuEventCreate");
	c->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : (64 << 20));
#ifdef KF_HAVE_CUPTI
	cupti.flush_bytes = c->flush_bytes;
#endif
	CU(c, c->d.mem_alloc(&c->flush_buf, c->flush_bytes), err,
	   "cuMemAlloc (flush buffer)");
	CU(c, c->d.mem_alloc(&c->scratch, 256), err, "cuMemAlloc");
	/* The stream-ordered allocator set up now, while the driver may
	 * still open what it needs: a candidate's first cudaMallocAsync
	 * comes after the runner's filter, which refuses files opened for
	 * writing (an honest scratch buffer from cudaMallocAsync killed the
	 * worker). */
	if (c->d.mem_alloc_async) {
		cu_ptr warm = 0;
		if (c->d.mem_alloc_async(&warm, 1u << 20, c->stream) == 0)
			c->d.mem_free_async(warm, c->stream);
		CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize (allocator)");
	}
	rc = open_nvrtc(&c->r, err);
	if (!rc)
		rc = engine_cubin(c, &cubin, &cubin_bytes, err);
	if (rc)
		return rc;
	cu_result r = c->d.module_load(&c->mod, cubin);
	free(cubin);
	CU(c, r, err, "cuModuleLoadData (engine kernels)");
	CU(c, c->d.module_func(&c->f_fill, c->mod, "kf_fill"), err, "kf_fill");
	CU(c, c->d.module_func(&c->f_poison, c->mod, "kf_poison"), err,
	   "kf_poison");
	CU(c, c->d.module_func(&c->f_compare, c->mod, "kf_compare"), err,
	   "kf_compare");
	CU(c, c->d.module_func(&c->f_worst, c->mod, "kf_worst"), err,
	   "kf_worst");
	CU(c, c->d.module_func(&c->f_checksum, c->mod, "kf_checksum"), err,
	   "kf_checksum");
	CU(c, c->d.module_func(&c->f_nudge, c->mod, "kf_nudge"), err,
	   "kf_nudge");
	open_nvml(c);
	/* A per-process key: a candidate cannot aim a change of its inputs
	 * at a hash collision it cannot compute. */
	c->hash_key =
	    kf_fnv1a64(&c, sizeof(c), kf_now_ns()) ^ (uint64_t)getpid();
	return 0;
}

static void cuda_fini(void *ctx)
{
	struct cuda *c = ctx;
	if (!c)
		return;
	if (c->ctx) {
		c->d.ctx_sync();
		if (c->flush_buf)
			c->d.mem_free(c->flush_buf);
		if (c->scratch)
			c->d.mem_free(c->scratch);
		if (c->stream)
			c->d.stream_destroy(c->stream);
		c->d.primary_release(c->dev);
	}
	free(c);
}

static cJSON *cuda_describe(void *ctx)
{
	struct cuda *c = ctx;
	cJSON *o = cJSON_CreateObject();
	int v = 0, clock = 0, mclock = 0, bus = 0, l2 = 0;
	size_t mem = 0;
	char cc[16], drv[96] = "";
	cJSON_AddStringToObject(o, "kind", "gpu");
	cJSON_AddStringToObject(o, "name", c->name);
	snprintf(cc, sizeof(cc), "%d.%d", c->cc_major, c->cc_minor);
	cJSON_AddStringToObject(o, "compute_capability", cc);
	cJSON_AddNumberToObject(o, "sms", c->sm_count);
	c->d.device_attr(&l2, CU_ATTR_L2_BYTES, c->dev);
	cJSON_AddNumberToObject(o, "l2_bytes", l2);
	c->d.device_mem(&mem, c->dev);
	cJSON_AddNumberToObject(o, "memory_bytes", (double)mem);
	c->d.device_attr(&clock, CU_ATTR_CLOCK_KHZ, c->dev);
	c->d.device_attr(&mclock, CU_ATTR_MEM_CLOCK_KHZ, c->dev);
	c->d.device_attr(&bus, CU_ATTR_BUS_WIDTH, c->dev);
	cJSON_AddNumberToObject(o, "sm_clock_max_mhz", clock / 1000.0);
	cJSON_AddNumberToObject(o, "memory_clock_mhz", mclock / 1000.0);
	cJSON_AddNumberToObject(o, "memory_bus_bits", bus);
	c->d.driver_version(&v);
	char cuda_v[16];
	snprintf(cuda_v, sizeof(cuda_v), "%d.%d", v / 1000, (v % 1000) / 10);
	cJSON_AddStringToObject(o, "cuda_driver_api", cuda_v);
	if (c->n.dev && c->n.driver(drv, sizeof(drv)) == 0)
		cJSON_AddStringToObject(o, "driver", drv);
	unsigned sm = 0;
	if (c->n.dev && c->n.clock(c->n.dev, NVML_CLOCK_SM, &sm) == 0)
		cJSON_AddNumberToObject(o, "sm_clock_mhz", sm);
	int nv_major = 0, nv_minor = 0;
	if (c->r.version && c->r.version(&nv_major, &nv_minor) == 0) {
		char s[16];
		snprintf(s, sizeof(s), "%d.%d", nv_major, nv_minor);
		cJSON_AddStringToObject(o, "nvrtc", s);
	}
	cJSON_AddBoolToObject(o, "nvml", c->n.dev != NULL);
	cJSON_AddBoolToObject(o, "cupti", c->cupti);
	cJSON_AddNumberToObject(o, "flush_bytes", (double)c->flush_bytes);
	return o;
}

static void *cuda_stream(void *ctx)
{
	return ((struct cuda *)ctx)->stream;
}

static int cuda_alloc(void *ctx, size_t bytes, void **ptr, struct kf_err *err)
{
	struct cuda *c = ctx;
	cu_ptr p = 0;
	CU(c, c->d.mem_alloc(&p, bytes ? bytes : 1), err, "cuMemAlloc");
	*ptr = (void *)(uintptr_t)p;
	return 0;
}

static void cuda_free(void *ctx, void *ptr)
{
	struct cuda *c = ctx;
	if (ptr)
		c->d.mem_free((cu_ptr)(uintptr_t)ptr);
}

/* Device memory another process opens through an IPC handle. */
static int cuda_share(void *ctx, size_t bytes, void **ptr, struct kf_share *h,
		      struct kf_err *err)
{
	struct cuda *c = ctx;
	h->fd = -1;
	int rc = cuda_alloc(ctx, bytes, ptr, err);
	if (rc)
		return rc;
	cu_result r = c->d.ipc_get(h->handle, (cu_ptr)(uintptr_t)*ptr);
	if (r) {
		cuda_free(ctx, *ptr);
		*ptr = NULL;
		return kf_err_set(err, KF_EIO, "cuIpcGetMemHandle: %s (%d)",
				  cu_err(c, r), r);
	}
	return 0;
}

static int cuda_map(void *ctx, const struct kf_share *h, size_t bytes,
		    void **ptr, struct kf_err *err)
{
	struct cuda *c = ctx;
	cu_ptr p = 0;
	struct cu_ipc_handle ipc;
	(void)bytes;
	memcpy(ipc.reserved, h->handle, sizeof(ipc.reserved));
	/* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */
	CU(c, c->d.ipc_open(&p, ipc, 1), err, "cuIpcOpenMemHandle");
	*ptr = (void *)(uintptr_t)p;
	return 0;
}

static void cuda_unshare(void *ctx, void *ptr, size_t bytes, struct kf_share *h,
			 bool mapped)
{
	struct cuda *c = ctx;
	(void)bytes;
	(void)h;
	if (!ptr)
		return;
	if (mapped)
		c->d.ipc_close((cu_ptr)(uintptr_t)ptr);
	else
		cuda_free(ctx, ptr);
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes,
		     struct kf_err *err)
{
	struct cuda *c = ctx;
	CU(c,
	   c->d.dtod_async((cu_ptr)(uintptr_t)dst, (cu_ptr)(uintptr_t)src,
			   bytes, c->stream),
	   err, "cuMemcpyDtoD");
	return 0;
}

static int cuda_read(void *ctx, void *host, const void *src, size_t bytes,
		     struct kf_err *err)
{
	struct cuda *c = ctx;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize");
	CU(c, c->d.dtoh(host, (cu_ptr)(uintptr_t)src, bytes), err,
	   "cuMemcpyDtoH");
	return 0;
}

static int cuda_write(void *ctx, void *dst, const void *host, size_t bytes,
		      struct kf_err *err)
{
	struct cuda *c = ctx;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize");
	CU(c, c->d.htod((cu_ptr)(uintptr_t)dst, host, bytes), err,
	   "cuMemcpyHtoD");
	return 0;
}

static int launch(struct cuda *c, cu_function f, int64_t n, void **args,
		  struct kf_err *err)
{
	int64_t want = (n + 255) / 256;
	unsigned blocks = (unsigned)(want < 1		      ? 1
				     : want > 8 * c->sm_count ? 8 * c->sm_count
							      : want);
	CU(c, c->d.launch(f, blocks, 1, 1, 256, 1, 1, 0, c->stream, args, NULL),
	   err, "cuLaunchKernel (engine)");
	return 0;
}

static int cuda_fill(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		     const struct kf_fill *f, struct kf_err *err)
{
	struct cuda *c = ctx;
	int dti = (int)dt, kind = (int)f->kind;
	long long nn = n;
	unsigned long long seed = f->seed;
	unsigned stream = f->stream;
	double p0 = f->p[0], p1 = f->p[1];
	long long scatter = f->scatter > 0 ? f->scatter : 0;
	uint64_t poison;
	kf_poison_bits(dt, &poison);
	if (n <= 0)
		return 0;
	void *args[] = {&ptr,  &dti, &nn, &seed,   &stream,
			&kind, &p0,  &p1, &poison, &scatter};
	return launch(c, c->f_fill, scatter ? scatter : n, args, err);
}

static int cuda_poison(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		       struct kf_err *err)
{
	struct cuda *c = ctx;
	int width = (int)kf_dtype_bytes(dt);
	long long nn = n;
	uint64_t bits;
	kf_poison_bits(dt, &bits);
	void *args[] = {&ptr, &width, &nn, &bits};
	return launch(c, c->f_poison, n, args, err);
}

static int cuda_nudge(void *ctx, void *ptr, int64_t n, uint64_t seed,
		      int input, struct kf_err *err)
{
	struct cuda *c = ctx;
	long long nn = n;
	unsigned long long sd = seed;
	void *args[] = {&ptr, &nn, &sd, &input};
	return n > 0 ? launch(c, c->f_nudge, n, args, err) : 0;
}

/* The device code's fill knows the bits distribution by its number. */
_Static_assert(KF_DIST_BITS == 11, "kf_fill's kind 11 is KF_DIST_BITS");

/* Mirrors struct stats of the device code. */
struct dev_stats {
	uint64_t mismatches, unwritten, nan_got, inf_got, nan_want, inf_want;
	uint64_t finite, max_abs, max_rel, worst, worst_index, min_key, max_key;
	double sum, sumsq, l1_err, l1_want;
	uint64_t toward_zero, away_from_zero;
};

static double from_key(uint64_t k)
{
	uint64_t b =
	    (k & 0x8000000000000000ull) ? k ^ 0x8000000000000000ull : ~k;
	double v;
	memcpy(&v, &b, 8);
	return v;
}

static double bits_double(uint64_t b)
{
	double v;
	memcpy(&v, &b, 8);
	return v;
}

static int cuda_compare(void *ctx, const void *got, const void *want,
			enum kf_dtype dt, int64_t n, struct kf_tolerance tol,
			struct kf_cmp *out, struct kf_err *err)
{
	struct cuda *c = ctx;
	struct dev_stats st;
	memset(&st, 0, sizeof(st));
	st.worst_index = ~0ull;
	st.min_key = ~0ull;
	memset(out, 0, sizeof(*out));
	out->n = n;
	out->worst_index = -1;
	if (n == 0)
		return 0;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize");
	CU(c, c->d.htod(c->scratch, &st, sizeof(st)), err, "cuMemcpyHtoD");
	int dti = (int)dt, width = (int)kf_dtype_bytes(dt);
	long long nn = n;
	double atol = tol.atol, rtol = tol.rtol;
	uint64_t poison;
	kf_poison_bits(dt, &poison);
	cu_ptr sp = c->scratch;
	void *args[] = {&got,  &want, &dti,    &width, &nn,
			&atol, &rtol, &poison, &sp};
	int rc = launch(c, c->f_compare, n, args, err);
	void *wargs[] = {&got, &want, &dti, &nn, &atol, &rtol, &sp};
	if (!rc)
		rc = launch(c, c->f_worst, n, wargs, err);
	if (rc)
		return rc;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize (compare)");
	CU(c, c->d.dtoh(&st, c->scratch, sizeof(st)), err, "cuMemcpyDtoH");
	out->mismatches = (int64_t)st.mismatches;
	out->toward_zero = (int64_t)st.toward_zero;
	out->away_from_zero = (int64_t)st.away_from_zero;
	out->unwritten = (int64_t)st.unwritten;
	out->nan_got = (int64_t)st.nan_got;
	out->inf_got = (int64_t)st.inf_got;
	out->nan_want = (int64_t)st.nan_want;
	out->inf_want = (int64_t)st.inf_want;
	out->max_abs = bits_double(st.max_abs);
	out->l1_err = st.l1_err;
	out->l1_want = st.l1_want;
	out->max_rel = bits_double(st.max_rel);
	if (st.finite) {
		out->want_mean = st.sum / (double)st.finite;
		double var = st.sumsq / (double)st.finite -
			     out->want_mean * out->want_mean;
		out->want_std = var > 0 ? sqrt(var) : 0;
		out->want_min = from_key(st.min_key);
		out->want_max = from_key(st.max_key);
	}
	if (st.worst_index < (uint64_t)n) {
		size_t w = kf_dtype_bytes(dt);
		unsigned char g[8] = {0}, v[8] = {0};
		out->worst_index = (int64_t)st.worst_index;
		CU(c,
		   c->d.dtoh(g, (cu_ptr)(uintptr_t)got + st.worst_index * w, w),
		   err, "cuMemcpyDtoH");
		CU(c,
		   c->d.dtoh(v, (cu_ptr)(uintptr_t)want + st.worst_index * w,
			     w),
		   err, "cuMemcpyDtoH");
		out->worst_got = kf_load_as_double(g, dt, 0);
		out->worst_want = kf_load_as_double(v, dt, 0);
		memcpy(&out->worst_got_bits, g, 8);
		memcpy(&out->worst_want_bits, v, 8);
	}
	return 0;
}

static int cuda_checksum(void *ctx, const void *ptr, size_t bytes,
			 uint64_t *out, struct kf_err *err)
{
	struct cuda *c = ctx;
	cu_ptr word = c->scratch + 128;
	CU(c, c->d.memset32_async(word, 0, 2, c->stream), err, "cuMemsetD32");
	unsigned long long b = bytes, key = c->hash_key;
	void *args[] = {&ptr, &b, &key, &word};
	int rc = launch(c, c->f_checksum, (int64_t)(bytes / 8 + 1), args, err);
	if (rc)
		return rc;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize (checksum)");
	CU(c, c->d.dtoh(out, word, 8), err, "cuMemcpyDtoH");
	*out ^= bytes;
	return 0;
}

static int cuda_flush(void *ctx, struct kf_err *err)
{
	struct cuda *c = ctx;
	static unsigned salt;
	/* Writing a buffer of twice the L2 evicts whatever the last call
	 * left there (the approach of nvbench). */
	cu_ptr to = c->flush_target ? c->flush_target : c->flush_buf;
	unsigned v = c->flush_target ? c->flush_value : ++salt;
	CU(c, c->d.memset32_async(to, v, c->flush_bytes / 4, c->stream), err,
	   "cuMemsetD32 (flush)");
	return 0;
}

static size_t cuda_flush_bytes(void *ctx)
{
	return ((struct cuda *)ctx)->flush_bytes;
}

static void cuda_flush_into(void *ctx, void *ptr, uint32_t value)
{
	struct cuda *c = ctx;
	c->flush_target = (cu_ptr)(uintptr_t)ptr;
	c->flush_value = value;
}

static int cuda_sync(void *ctx, struct kf_err *err)
{
	struct cuda *c = ctx;
	CU(c, c->d.ctx_sync(), err, "cuCtxSynchronize");
	return 0;
}

static void read_clock(struct cuda *c, struct kf_sample *s)
{
	unsigned mhz = 0;
	unsigned long long reasons = 0;
	s->clock_mhz = 0;
	s->throttled = false;
	if (!c->n.dev)
		return;
	if (c->n.clock(c->n.dev, NVML_CLOCK_SM, &mhz) == 0)
		s->clock_mhz = mhz;
	if (c->n.reasons && c->n.reasons(c->n.dev, &reasons) == 0)
		s->throttled = (reasons & NVML_THROTTLED) != 0;
}

static int cuda_time_call(void *ctx, kf_entry_fn fn, const DLTensor *in,
			  int n_in, DLTensor *out, int n_out, bool flush,
			  struct kf_sample *s, struct kf_err *err)
{
	struct cuda *c = ctx;
	float ms = 0;
	s->kernels = s->streams = -1;
#ifdef KF_HAVE_CUPTI
	if (c->cupti) {
		/* Drain what came before (the load: constructors may launch
		 * work). After a call the drain was its own, once it had
		 * said "done" (cuda_time_finish): a forced drain costs about
		 * 0.15 ms on an H200, and inside the engine's view of every
		 * call it was time a runner taken over would not spend,
		 * room to under-report in (docs/measuring.md). Records that
		 * began before the window are left out either way
		 * (note_activity). */
		if (!cupti.drained)
			cupti.flush_all(1);
		cupti.drained = false;
		cupti.activities = 0;
		cupti.n_streams = 0;
		cupti.first_start = cupti.last_end = 0;
		cupti.flush_pending = flush;
		cupti.timestamp(&cupti.t0);
	}
#endif
	/* The flush is queued right before the first event: the device goes
	 * from it straight into the call while the host enqueues the
	 * candidate's work, with no idle gap in which clocks could drop. */
	if (flush) {
		int rc = cuda_flush(c, err);
		/* The host's view (no trace) would count the flush: wait. */
		if (!rc && !c->cupti)
			rc = cuda_sync(c, err);
		if (rc)
			return rc;
	}
	uint64_t t0 = kf_now_ns();
	CU(c, c->d.event_record(c->ev0, c->stream), err, "cuEventRecord");
	s->rc = fn(in, n_in, out, n_out, c->stream);
	CU(c, c->d.event_record(c->ev1, c->stream), err, "cuEventRecord");
	/* Join everything the candidate started, on any stream. */
	CU(c, c->d.ctx_sync(), err, "the candidate's work");
	uint64_t t1 = kf_now_ns();
	CU(c, c->d.event_elapsed(&ms, c->ev0, c->ev1), err,
	   "cuEventElapsedTime");
	s->event_ns = ms * 1e6;
	/* Without a trace: the host's view, which includes the flush. */
	s->ns = (double)(t1 - t0);
	return 0;
}

/* The rest of a sample, after the runner has said the call is done: the
 * clock, and the span of the device trace (its cost grows with the number
 * of records, so it stays out of the worker's view of the call). */
static int cuda_time_finish(void *ctx, struct kf_sample *s, struct kf_err *err)
{
	struct cuda *c = ctx;
	(void)err;
	read_clock(c, s);
#ifdef KF_HAVE_CUPTI
	if (c->cupti) {
		cupti.flush_all(1);
		cupti.drained = true;
		s->kernels = cupti.activities;
		s->streams = cupti.n_streams;
		double span = cupti.activities
				  ? (double)(cupti.last_end - cupti.first_start)
				  : 0;
		/* The longer of the stream's view and the span of all device
		 * work in the window: work on other streams is counted. */
		s->ns = span > s->event_ns ? span : s->event_ns;
	}
#endif
	return 0;
}

/* What a candidate could change for everyone after it: the context's
 * limits (not the stack size, which the driver grows by itself for kernels
 * that need it), its cache preference and the engine stream's L2 access
 * policy window. */
static void cuda_state(void *ctx, char *buf, size_t cap)
{
	struct cuda *c = ctx;
	static const char *const names[] = {
	    NULL,	    "printf_fifo",	"malloc_heap",
	    "sync_depth",   "pending_launches", "l2_fetch",
	    "persisting_l2"};
	size_t len = 0;
	for (int l = 1; l <= 6 && len < cap; l++) {
		size_t v = 0;
		c->d.ctx_limit(&v, l);
		len += (size_t)snprintf(buf + len, cap - len, "%s=%zu ",
					names[l], v);
	}
	int cfg = -1;
	c->d.ctx_cache_config(&cfg);
	/* CUaccessPolicyWindow inside a 64-byte attribute value: base
	 * pointer, bytes, hit ratio. */
	union {
		unsigned char raw[64];
		struct {
			void *base;
			size_t bytes;
			float hit_ratio;
		} w;
	} apw;
	memset(&apw, 0, sizeof(apw));
	c->d.stream_attr(c->stream, 1, &apw);
	if (len < cap)
		snprintf(buf + len, cap - len,
			 "cache_config=%d access_window=%zu@%g", cfg,
			 apw.w.bytes, (double)apw.w.hit_ratio);
}

static int cuda_energy(void *ctx, double *mj, struct kf_err *err)
{
	struct cuda *c = ctx;
	unsigned long long e = 0;
	if (!c->n.dev || !c->n.energy || c->n.energy(c->n.dev, &e) != 0)
		return kf_err_set(err, KF_ENOSYS,
				  "the device has no energy counter");
	*mj = (double)e;
	return 0;
}

/* The roofline probe: copy bandwidth (device to device, read + write
 * counted), FP32 FMA rate and the bf16 matrix rate through cuBLAS. */
static const char cuda_probe[] =
    "#include <cuda_runtime.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <cublas_v2.h>\n"
    "__global__ void fma_loop(float *out, int iters) {\n"
    "  float a[8]; for (int j = 0; j < 8; j++) a[j] = threadIdx.x + j;\n"
    "  for (int i = 0; i < iters; i++)\n"
    "    for (int j = 0; j < 8; j++) a[j] = fmaf(a[j], 0.9999f, 1e-7f);\n"
    "  float s = 0; for (int j = 0; j < 8; j++) s += a[j];\n"
    "  if (s == 1234.5f) out[0] = s;\n"
    "}\n"
    "static float best_ms(cudaEvent_t a, cudaEvent_t b, float best) {\n"
    "  float ms; cudaEventElapsedTime(&ms, a, b);\n"
    "  return best == 0 || ms < best ? ms : best;\n"
    "}\n"
    "extern \"C\" int kf_probe(double *flops, double *bytes,\n"
    "                          double *matrix) {\n"
    "  size_t n = (size_t)2 << 30; void *x, *y; float *o;\n"
    "  if (cudaMalloc(&x, n) || cudaMalloc(&y, n) || cudaMalloc(&o, 4))\n"
    "    return 1;\n"
    "  cudaMemset(x, 1, n); cudaEvent_t a, b;\n"
    "  cudaEventCreate(&a); cudaEventCreate(&b); float ms = 0;\n"
    "  for (int r = 0; r < 6; r++) { cudaEventRecord(a);\n"
    "    cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice);\n"
    "    cudaEventRecord(b); cudaEventSynchronize(b);\n"
    "    if (r) ms = best_ms(a, b, ms); }\n"
    "  *bytes = 2.0 * n / (ms * 1e-3);\n"
    "  int dev, sms; cudaGetDevice(&dev);\n"
    "  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);\n"
    "  int blocks = sms * 8, threads = 256, iters = 1 << 14; ms = 0;\n"
    "  for (int r = 0; r < 6; r++) { cudaEventRecord(a);\n"
    "    fma_loop<<<blocks, threads>>>(o, iters);\n"
    "    cudaEventRecord(b); cudaEventSynchronize(b);\n"
    "    if (r) ms = best_ms(a, b, ms); }\n"
    "  *flops = 2.0 * 8 * iters * (double)blocks * threads / (ms * 1e-3);\n"
    "  cublasHandle_t h; int m = 8192; *matrix = 0;\n"
    "  if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {\n"
    "    float alpha = 1, beta = 0; ms = 0;\n"
    "    cudaMemset(x, 0x3c, (size_t)m * m * 2);\n"
    "    for (int r = 0; r < 6; r++) { cudaEventRecord(a);\n"
    "      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, x,\n"
    "        CUDA_R_16BF, m, (char *)x + (size_t)m * m * 2, CUDA_R_16BF,\n"
    "        m, &beta, y, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,\n"
    "        CUBLAS_GEMM_DEFAULT);\n"
    "      cudaEventRecord(b); cudaEventSynchronize(b);\n"
    "      if (r) ms = best_ms(a, b, ms); }\n"
    "    *matrix = 2.0 * m * (double)m * m / (ms * 1e-3);\n"
    "    cublasDestroy(h); }\n"
    "  cudaFree(x); cudaFree(y); cudaFree(o);\n"
    "  return cudaGetLastError() != cudaSuccess;\n"
    "}\n";

const struct kf_backend_ops kf_backend_cuda = {
    .version = KF_BACKEND_VERSION,
    .name = "cuda",
    .device_type = kDLCUDA,
    .init = cuda_init,
    .fini = cuda_fini,
    .describe = cuda_describe,
    .stream = cuda_stream,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .share = cuda_share,
    .map = cuda_map,
    .unshare = cuda_unshare,
    .copy = cuda_copy,
    .read = cuda_read,
    .write = cuda_write,
    .fill = cuda_fill,
    .poison = cuda_poison,
    .nudge = cuda_nudge,
    .compare = cuda_compare,
    .checksum = cuda_checksum,
    .flush_bytes = cuda_flush_bytes,
    .flush_into = cuda_flush_into,
    .flush = cuda_flush,
    .sync = cuda_sync,
    .time_call = cuda_time_call,
    .time_finish = cuda_time_finish,
    .state = cuda_state,
    .energy_mj = cuda_energy,
    .available = cuda_available,
    .probe_source = cuda_probe,
    .probe_ext = ".cu",
    .probe_libraries = "cublas",
};
