/*
 * policy.c: the link-time policy. What a candidate's shared object imports
 * says what it can do: by default no threads, processes, files, sockets,
 * environment, dynamic loading, raw system calls, clocks, signals, shared
 * memory, memory protection keys, CUDA streams or graphs, device-global
 * state, the CUDA driver API, or libraries the task does not allow.
 *
 * Private memory mappings (mmap, munmap, mremap, mprotect) and the
 * floating-point environment (fesetround, fesetenv, ...) are not banned
 * here: what they could do against kforge is stopped where it happens, for
 * imports and inline system calls alike. The runner's filter kills any
 * mapping or protection change that makes memory executable, its read-only
 * segments and the inputs are sealed (mseal), and the floating-point state
 * (MXCSR, x87 control word) is compared after every call (global_state).
 * Banning the imports only rejected honest kernels: a packing buffer from
 * mmap, a rounding mode saved and restored with fegetenv/fesetenv.
 */
#include <stdio.h>
#include <string.h>

#include "eval_int.h"

struct rule {
	const char *category;
	const char *library; /* allowed when the task allows it, or NULL */
	bool prefix;	     /* match names starting with each entry */
	const char *const *names;
};

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct rule rules[] = {
    {"threads", NULL, false,
     NAMES("pthread_create", "thrd_create", "clone", "clone3")},
    {"threads", NULL, true,
     NAMES("_ZNSt6thread", "_ZNSt3__16thread", "GOMP_", "omp_", "__kmpc_")},
    {"processes", NULL, false,
     NAMES("fork", "vfork", "execl", "execle", "execlp", "execv", "execve",
	   "execvp", "execvpe", "fexecve", "system", "popen", "posix_spawn",
	   "posix_spawnp", "daemon", "wait", "waitpid", "wait3", "wait4")},
    {"files", NULL, false,
     NAMES("fopen", "fopen64", "freopen", "freopen64", "open", "open64",
	   "openat", "openat64", "__open_2", "__open64_2", "__openat_2",
	   "creat", "creat64", "remove", "unlink", "unlinkat", "rename",
	   "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "opendir",
	   "fdopendir", "scandir", "stat", "stat64", "lstat", "fstatat",
	   "statx", "__xstat", "__lxstat", "access", "faccessat", "truncate",
	   "readlink", "symlink", "link", "chdir", "chmod", "chown", "mkfifo",
	   "mknod", "tmpfile", "mkstemp", "mkostemp", "dup2", "dup3")},
    {"network", NULL, false,
     NAMES("socket", "socketpair", "connect", "bind", "listen", "accept",
	   "accept4", "send", "sendto", "sendmsg", "recv", "recvfrom",
	   "recvmsg", "getaddrinfo", "gethostbyname", "gethostbyname_r",
	   "getsockopt", "setsockopt", "shutdown")},
    {"environment", NULL, false,
     NAMES("getenv", "secure_getenv", "__secure_getenv", "setenv", "putenv",
	   "unsetenv", "clearenv", "environ", "__environ")},
    {"dynamic loading", NULL, false,
     NAMES("dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dlinfo",
	   "dl_iterate_phdr", "_dl_find_object", "dlerror")},
    {"files", NULL, true,
     NAMES("_ZNSt13basic_filebuf", "_ZNSt14basic_ifstream",
	   "_ZNSt14basic_ofstream", "_ZNSt13basic_fstream",
	   "_ZNSt12__basic_file", "_ZNSt7__cxx1113basic_filebuf",
	   "_ZNSt10filesystem", "_ZNSt3__113basic_filebuf")},
    {"clocks", NULL, true, NAMES("_ZNSt6chrono", "_ZNSt3__16chrono")},
    {"raw system calls", NULL, false, NAMES("syscall")},
    {"clocks", NULL, false,
     NAMES("clock_gettime", "gettimeofday", "time", "clock", "clock_getres",
	   "timespec_get", "ftime", "times", "getrusage", "clock_nanosleep",
	   "nanosleep", "usleep", "sleep")},
    {"signals", NULL, false,
     NAMES("signal", "sigaction", "kill", "tgkill", "alarm", "setitimer",
	   "timer_create", "sigprocmask", "pthread_sigmask", "pthread_kill")},
    {"shared memory", NULL, false,
     NAMES("shm_open", "shmget", "shmat", "memfd_create")},
    {"memory protection keys", NULL, false,
     NAMES("pkey_alloc", "pkey_mprotect")},
    {"process state", NULL, false,
     NAMES("setrlimit", "prlimit", "prlimit64", "prctl", "ptrace",
	   "process_vm_readv", "process_vm_writev", "pidfd_open",
	   "pidfd_send_signal", "sigqueue", "io_uring_setup", "chroot",
	   "setuid", "setgid", "seteuid", "setegid", "sched_setaffinity",
	   "sched_setscheduler", "setpriority", "nice", "exit", "_exit",
	   "_Exit", "quick_exit")},
    {"CUDA streams", NULL, false,
     NAMES("cudaStreamCreate", "cudaStreamCreateWithFlags",
	   "cudaStreamCreateWithPriority", "cudaLaunchHostFunc",
	   "cudaStreamAddCallback")},
    {"CUDA graphs", NULL, true,
     NAMES("cudaGraph", "cudaStreamBeginCapture", "cudaStreamEndCapture",
	   "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
	   "cudaUserObject")},
    {"CUDA device-global state", NULL, false,
     NAMES("cudaDeviceSetLimit", "cudaDeviceSetCacheConfig",
	   "cudaDeviceSetSharedMemConfig", "cudaCtxResetPersistingL2Cache",
	   "cudaStreamSetAttribute", "cudaDeviceReset", "cudaSetDevice",
	   "cudaSetDeviceFlags", "cudaSetValidDevices", "cudaThreadSetLimit",
	   "cudaThreadSetCacheConfig", "cudaThreadExit", "cudaDeviceSetMemPool",
	   "cudaDeviceSetGraphMemAttribute", "cudaDeviceEnablePeerAccess",
	   "cudaMallocManaged", "cudaDeviceFlushGPUDirectRDMAWrites",
	   "cudaInitDevice")},
    {"the CUDA driver API", NULL, true,
     NAMES("cudaGetDriverEntryPoint", "cudaGetExportTable")},
    {"CUDA device-global state", NULL, true,
     NAMES("cudaIpc", "cudaProfiler", "cudaGraphicsRegister")},
    {"the CUDA driver API", NULL, true, NAMES("cu")},
    {"NVIDIA management and tracing", NULL, true,
     NAMES("nvml", "cupti", "nvrtc", "nvJitLink", "nvtx")},
    {"cuBLAS", "cublas", true, NAMES("cublas")},
    {"cuBLASLt", "cublasLt", true, NAMES("cublasLt")},
    {"cuDNN", "cudnn", true, NAMES("cudnn")},
    {"cuFFT", "cufft", true, NAMES("cufft")},
    {"cuRAND", "curand", true, NAMES("curand")},
    {"cuSPARSE", "cusparse", true, NAMES("cusparse")},
    {"cuSOLVER", "cusolver", true, NAMES("cusolver")},
    {"NCCL", "nccl", true, NAMES("nccl")},
};

/* "cu" followed by a capital letter: the driver API (cuInit), not the
 * runtime (cudaMalloc). */
static bool matches(const struct rule *r, const char *name)
{
	for (const char *const *p = r->names; *p; p++) {
		size_t n = strlen(*p);
		if (!r->prefix) {
			if (!strcmp(name, *p))
				return true;
			continue;
		}
		if (strncmp(name, *p, n))
			continue;
		if (!strcmp(*p, "cu"))
			return name[2] >= 'A' && name[2] <= 'Z';
		return true;
	}
	return false;
}

static bool library_allowed(const struct kf_task *t, const char *backend,
			    const char *lib)
{
	for (int i = 0; i < t->n_libraries; i++)
		if (!strcmp(t->libraries[i], lib))
			return true;
	for (int i = 0; i < t->n_cuda_libraries && !strcmp(backend, "cuda");
	     i++)
		if (!strcmp(t->cuda_libraries[i], lib))
			return true;
	return false;
}

int kf_policy_check(const struct kf_task *t, const char *backend,
		    char *const *imports, int n, char *why, size_t cap)
{
	int bad = 0;
	size_t len = 0;
	why[0] = '\0';
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(rules) / sizeof(rules[0]); k++) {
			const struct rule *r = &rules[k];
			/* cublasLt names also start with "cublas": the more
			 * specific rule below decides for them. */
			if (!strcmp(r->category, "cuBLAS") &&
			    !strncmp(imports[i], "cublasLt", 8))
				continue;
			if (!matches(r, imports[i]))
				continue;
			if (r->library &&
			    library_allowed(t, backend, r->library))
				break;
			if (len < cap)
				len += (size_t)snprintf(
				    why + len, cap - len, "%s%s (%s%s%s)",
				    bad ? ", " : "", imports[i], r->category,
				    r->library ? ": the task does not allow "
					       : "",
				    r->library ? r->library : "");
			bad++;
			break;
		}
	}
	return bad;
}
