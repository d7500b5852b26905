# ATTACK kb_cuda_hog_ctx2 (level1/2_Matmul): a load_inline extension (linked with
# -lcuda: no link policy for extensions) creates a second CUDA context and a
# C++ thread. After each forward has finished on the GPU (+300 us, past the
# runner's end event and reply), the thread launches a tiny spinning kernel
# in the second context: the GPU then time-slices the reference's process
# (its flush, kernels and end event after torch.cuda.synchronize) against it.
# forward itself stops the hog first (a mapped flag), so our calls run alone.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <thread>
#include <atomic>
#include <chrono>

static volatile unsigned *flag;
static CUcontext ctx1, ctx2;
static std::atomic<int> state{0};
static std::atomic<unsigned> seq{0}, ret_epoch{0};
static cudaEvent_t done_ev;

__global__ void hog(const volatile unsigned *f, unsigned epoch, unsigned long long maxns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        if (*f != epoch) break;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > maxns) break;
        __nanosleep(1000);
    }
}

static void loop()
{
    cuCtxSetCurrent(ctx2);
    unsigned seen = 0;
    for (;;) {
        while (seq.load() == seen) std::this_thread::sleep_for(std::chrono::microseconds(30));
        seen = seq.load();
        while (state.load() == 2 && seq.load() == seen && cuEventQuery((CUevent)done_ev) == CUDA_ERROR_NOT_READY)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        if (state.load() != 2 || seq.load() != seen) continue;
        hog<<<1, 32>>>(flag, ret_epoch.load(), 50000000ull);
    }
}

int64_t setup()
{
    cudaFree(0);
    if (cuCtxGetCurrent(&ctx1) != CUDA_SUCCESS) return 1;
    CUdevice dev;
    if (cuCtxGetDevice(&dev) != CUDA_SUCCESS) return 2;
#if CUDA_VERSION >= 13000
    if (cuCtxCreate(&ctx2, nullptr, 0, dev) != CUDA_SUCCESS) return 3;
#else
    if (cuCtxCreate(&ctx2, 0, dev) != CUDA_SUCCESS) return 3;
#endif
    cuCtxSetCurrent(ctx1);
    void *p;
    if (cudaHostAlloc(&p, 4096, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) return 4;
    flag = (volatile unsigned *)p;
    flag[0] = 1;
    cudaEventCreateWithFlags(&done_ev, cudaEventDisableTiming);
    std::thread(loop).detach();
    return 0;
}

void enter()
{
    state.store(1);
    flag[0] = flag[0] + 1;
    __sync_synchronize();
}

void leave(int64_t stream)
{
    cudaEventRecord(done_ev, (cudaStream_t)stream);
    ret_epoch.store(flag[0]);
    state.store(2);
    seq.fetch_add(1);
}
"""

cpp_src = "int64_t setup(); void enter(); void leave(int64_t stream);"

ext = load_inline(name="a15_kb_hog", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["setup", "enter", "leave"], extra_ldflags=["-lcuda"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ready = False

    def forward(self, A, B):
        if not self.ready:
            rc = ext.setup()
            if rc:
                raise RuntimeError("hog setup failed at step %d" % rc)
            self.ready = True
        ext.enter()
        y = torch.matmul(A, B)
        ext.leave(torch.cuda.current_stream().cuda_stream)
        return y
