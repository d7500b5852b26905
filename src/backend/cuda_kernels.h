/*
 * cuda_kernels.h: the engine's own device code for the cuda backend, as
 * source that cuda.c compiles with NVRTC at run time (and caches). It makes
 * inputs with the same Philox generator as the host backend, poisons,
 * compares, and hashes buffers on the device, so that large tensors never
 * travel to the host.
 */
#ifndef KFORGE_CUDA_KERNELS_H
#define KFORGE_CUDA_KERNELS_H

#include "nudge.h"

/* Element types, as in enum kf_dtype. */
#define KF_CUDA_SOURCE                                                         \
	"typedef unsigned int u32;\n"                                          \
	"typedef unsigned long long u64;\n"                                    \
	"typedef long long i64;\n"                                             \
	"#define KF_PI 3.14159265358979323846\n"                               \
	"__device__ void philox(u32 c[4], u32 k0, u32 k1) {\n"                 \
	"  for (int r = 0; r < 10; r++) {\n"                                   \
	"    u32 hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];\n" \
	"    u32 hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];\n" \
	"    u32 n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;\n"               \
	"    c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;\n"                  \
	"    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"                          \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"__device__ double unit(u32 a, u32 b) {\n"                             \
	"  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) *\n"      \
	"         (1.0 / 9007199254740992.0);\n"                               \
	"}\n"                                                                  \
	"__device__ double rng(int kind, double p0, double p1, u64 seed,\n"    \
	"                      u32 stream, u64 i) {\n"                         \
	"  u32 c[4] = {(u32)i, (u32)(i >> 32), stream, 0x6b666f72u};\n"        \
	"  philox(c, (u32)seed, (u32)(seed >> 32));\n"                         \
	"  double u0 = unit(c[0], c[1]), u1 = unit(c[2], c[3]);\n"             \
	"  switch (kind) {\n"                                                  \
	"  case 0: return p0 + p1 * (sqrt(-2.0 * log(1.0 - u0)) *\n"           \
	"                            cos(2.0 * KF_PI * u1));\n"                \
	"  case 1: return p0 + (p1 - p0) * u0;\n"                              \
	"  case 2: { double v = p0 * tan(KF_PI * (u0 - 0.5));\n"               \
	"            return v > p1 ? p1 : v < -p1 ? -p1 : v; }\n"              \
	"  case 3: { double m = pow(10.0, p0 + (p1 - p0) * u0);\n"             \
	"            return u1 < 0.5 ? -m : m; }\n"                            \
	"  case 4: { double lo = ceil(p0), hi = ceil(p1);\n"                   \
	"            double v = lo + floor((hi - lo) * u0);\n"                 \
	"            return v >= hi ? hi - 1 : v; }\n"                         \
	"  case 6: return p1 + p0 * (sqrt(-2.0 * log(1.0 - u0)) *\n"           \
	"                            cos(2.0 * KF_PI * u1));\n"                \
	"  case 7: { double m = fmod(u1 * 1048576.0, 1.0) < 0.5\n"             \
	"              ? exp2(p0 + (p1 - p0) * u0) : 0.5 + 1.5 * u0;\n"        \
	"            return u1 < 0.5 ? -m : m; }\n"                            \
	"  case 8: { double k = floor(p0 * u0); k = k >= p0 ? p0 - 1 : k;\n"   \
	"            return p1 * (k - floor(p0 / 2)); }\n"                     \
	"  case 9: return p1 - p0 * fabs(sqrt(-2.0 * log(1.0 - u0)) *\n"       \
	"                                 cos(2.0 * KF_PI * u1));\n"           \
	"  case 10: return fmod(u1 * 1048576.0, 1.0) < p0 ? 0.0\n"             \
	"              : p1 * (sqrt(-2.0 * log(1.0 - u0)) *\n"                 \
	"                      cos(2.0 * KF_PI * u1));\n"                      \
	"  default: return p0;\n"                                              \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"__device__ double load(const void *p, int dt, i64 i) {\n"             \
	"  switch (dt) {\n"                                                    \
	"  case 0: return ((const float *)p)[i];\n"                            \
	"  case 1: return ((const double *)p)[i];\n"                           \
	"  case 2: { float f; unsigned short h = ((const unsigned short *)p)[i];\n" \
	"            asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"      \
	"            return f; }\n"                                            \
	"  case 3: return __int_as_float(\n"                                   \
	"            (int)((u32)((const unsigned short *)p)[i] << 16));\n"     \
	"  case 4: return ((const int *)p)[i];\n"                              \
	"  default: return (double)((const i64 *)p)[i];\n"                     \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"__device__ void store(void *p, int dt, i64 i, double v) {\n"          \
	"  float f = (float)v; unsigned short h;\n"                            \
	"  switch (dt) {\n"                                                    \
	"  case 0: ((float *)p)[i] = f; break;\n"                              \
	"  case 1: ((double *)p)[i] = v; break;\n"                             \
	"  case 2: asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"    \
	"          ((unsigned short *)p)[i] = h; break;\n"                     \
	"  case 3: asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"   \
	"          ((unsigned short *)p)[i] = h; break;\n"                     \
	"  case 4: ((int *)p)[i] = (int)v; break;\n"                           \
	"  default: ((i64 *)p)[i] = (i64)v; break;\n"                          \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"__device__ u64 bits_of(const void *p, int width, i64 i) {\n"          \
	"  if (width == 2) return ((const unsigned short *)p)[i];\n"           \
	"  if (width == 4) return ((const u32 *)p)[i];\n"                      \
	"  return ((const u64 *)p)[i];\n"                                      \
	"}\n"                                                                  \
	"#define GRID_LOOP(i, n) for (i64 i = blockIdx.x * (i64)blockDim.x +\\\n" \
	"  threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)\n"         \
	"__device__ int width_of(int dt) {\n"                                  \
	"  return dt == 1 || dt == 5 ? 8 : dt == 2 || dt == 3 ? 2 : 4;\n"      \
	"}\n"                                                                  \
	"/* kf_rng_bits of backend.c: raw bits, never the poison. */\n"       \
	"__device__ u64 rbits(int dt, u64 seed, u32 stream, u64 i,\n"         \
	"                     u64 poison) {\n"                                 \
	"  u32 c[4] = {(u32)i, (u32)(i >> 32), stream, 0x6b666f72u};\n"        \
	"  philox(c, (u32)seed, (u32)(seed >> 32));\n"                         \
	"  int w = dt == 1 ? 64 : dt == 2 || dt == 3 ? 16 : 32;\n"             \
	"  u64 e = dt == 1 ? 0x7ff0000000000000ull : dt == 2 ? 0x7c00ull\n"    \
	"        : dt == 3 ? 0x7f80ull : 0x7f800000ull;\n"                     \
	"  u64 mm = dt == 1 ? 0x000fffffffffffffull : dt == 2 ? 0x3ffull\n"    \
	"         : dt == 3 ? 0x7full : 0x7fffffull;\n"                        \
	"  u64 q = dt == 1 ? 1ull << 51 : dt == 2 ? 0x200ull\n"                \
	"        : dt == 3 ? 0x40ull : 0x400000ull;\n"                         \
	"  u64 sign = (u64)(c[2] >> 31) << (w - 1);\n"                         \
	"  u64 all = w == 64 ? ~0ull : (1ull << w) - 1;\n"                     \
	"  u64 rnd = ((u64)c[0] << 32 | c[1]) & all, m = rnd & mm, v;\n"       \
	"  switch (c[3] & 15) {\n"                                             \
	"  case 0: case 1: v = sign; break;\n"                                 \
	"  case 2: v = sign | e; break;\n"                                     \
	"  case 3: v = sign | e | q | m; break;\n"                             \
	"  case 4: m &= ~q; v = sign | e | (m ? m : 1); break;\n"              \
	"  case 5: case 6: v = sign | (m ? m : 1); break;\n"                   \
	"  case 7: v = sign | (e - (e & (0 - e))) | mm; break;\n"              \
	"  default: v = rnd; break;\n"                                         \
	"  }\n"                                                                \
	"  return v == poison ? v ^ 1 : v;\n"                                  \
	"}\n"                                                                  \
	"/* kf_scatter_pos of backend.c. */\n"                                \
	"__device__ i64 scatter_pos(u64 seed, u32 stream, u64 j, i64 n) {\n"  \
	"  u32 c[4] = {(u32)j, (u32)(j >> 32), stream, 0x73636174u};\n"        \
	"  philox(c, (u32)seed, (u32)(seed >> 32));\n"                         \
	"  return (i64)((((u64)c[0] << 32) | c[1]) % (u64)n);\n"               \
	"}\n"                                                                  \
	"extern \"C\" __global__ void kf_fill(void *p, int dt, i64 n, u64 seed,\n" \
	"    u32 stream, int kind, double p0, double p1, u64 poison,\n"        \
	"    i64 scatter) {\n"                                                 \
	"  int w = width_of(dt);\n"                                            \
	"  GRID_LOOP(j, scatter > 0 ? scatter : n) {\n"                        \
	"    i64 i = scatter > 0 ? scatter_pos(seed, stream, j, n) : j;\n"     \
	"    if (kind == 11) { u64 b = rbits(dt, seed, stream, i, poison);\n"  \
	"      if (w == 2) ((unsigned short *)p)[i] = (unsigned short)b;\n"    \
	"      else if (w == 4) ((u32 *)p)[i] = (u32)b;\n"                     \
	"      else ((u64 *)p)[i] = b; }\n"                                    \
	"    else store(p, dt, i, rng(kind, p0, p1, seed, stream, i));\n"      \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"extern \"C\" __global__ void kf_poison(void *p, int width, i64 n,\n"  \
	"    u64 bits) {\n"                                                    \
	"  GRID_LOOP(i, n) {\n"                                                \
	"    if (width == 2) ((unsigned short *)p)[i] = (unsigned short)bits;\n" \
	"    else if (width == 4) ((u32 *)p)[i] = (u32)bits;\n"                \
	"    else ((u64 *)p)[i] = bits;\n"                                     \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"struct stats {\n"                                                     \
	"  u64 mismatches, unwritten, nan_got, inf_got, nan_want, inf_want;\n" \
	"  u64 finite, max_abs, max_rel, worst, worst_index, min_key, max_key;\n" \
	"  double sum, sumsq, l1_err, l1_want;\n"                             \
	"  u64 toward_zero, away_from_zero;\n"                                 \
	"};\n"                                                                 \
	"__device__ double badness(double g, double v, double atol,\n"         \
	"                          double rtol) {\n"                           \
	"  if (isnan(v) || isnan(g)) return isnan(v) && isnan(g) ? 0 : 1.0/0.0;\n" \
	"  if (isinf(v) || isinf(g)) return g == v ? 0 : 1.0 / 0.0;\n"         \
	"  double lim = atol + rtol * fabs(v), d = fabs(g - v);\n"             \
	"  if (lim == 0) return d == 0 ? 0 : 1.0 / 0.0;\n"                     \
	"  return d / lim;\n"                                                  \
	"}\n"                                                                  \
	"/* Element i's badness; a bit-exact task (atol = rtol = 0) compares\n" \
	"   bits: -0 is not +0, a NaN keeps its payload. */\n"                 \
	"__device__ double elem_badness(const void *got, const void *want,\n" \
	"    int dt, i64 i, double atol, double rtol) {\n"                     \
	"  int w = width_of(dt);\n"                                            \
	"  if (atol == 0 && rtol == 0)\n"                                      \
	"    return bits_of(got, w, i) == bits_of(want, w, i) ? 0 : 1.0/0.0;\n" \
	"  /* int64 beyond 2^53 does not survive double: exact test. */\n"    \
	"  if (dt == 5 && ((const i64 *)got)[i] == ((const i64 *)want)[i])\n" \
	"    return 0;\n"                                                      \
	"  return badness(load(got, dt, i), load(want, dt, i), atol, rtol);\n" \
	"}\n"                                                                  \
	"__device__ u64 order_key(double v) {\n"                               \
	"  i64 b = __double_as_longlong(v);\n"                                 \
	"  return b >= 0 ? (u64)b ^ 0x8000000000000000ull : ~(u64)b;\n"        \
	"}\n"                                                                  \
	"__device__ u64 wsum(u64 v) {\n"                                       \
	"  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(~0u, v, o);\n"   \
	"  return v;\n"                                                        \
	"}\n"                                                                  \
	"__device__ double wsumd(double v) {\n"                                \
	"  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(~0u, v, o);\n"   \
	"  return v;\n"                                                        \
	"}\n"                                                                  \
	"__device__ u64 wmax(u64 v) {\n"                                       \
	"  for (int o = 16; o; o >>= 1) v = max(v, __shfl_down_sync(~0u, v, o));\n" \
	"  return v;\n"                                                        \
	"}\n"                                                                  \
	"__device__ u64 wmin(u64 v) {\n"                                       \
	"  for (int o = 16; o; o >>= 1) v = min(v, __shfl_down_sync(~0u, v, o));\n" \
	"  return v;\n"                                                        \
	"}\n"                                                                  \
	"extern \"C\" __global__ void kf_compare(const void *got,\n"           \
	"    const void *want, int dt, int width, i64 n, double atol,\n"       \
	"    double rtol, u64 poison, stats *s) {\n"                           \
	"  u64 mism = 0, unw = 0, ng = 0, ig = 0, nw = 0, iw = 0, fin = 0;\n"  \
	"  u64 mabs = 0, mrel = 0, worst = 0, mn = ~0ull, mx = 0;\n"           \
	"  double sum = 0, sq = 0, l1e = 0, l1w = 0;\n"                         \
	"  u64 tz = 0, az = 0;\n"                                              \
	"  GRID_LOOP(i, n) {\n"                                                \
	"    double g = load(got, dt, i), v = load(want, dt, i);\n"            \
	"    if (bits_of(got, width, i) == poison &&\n"                        \
	"        bits_of(want, width, i) != poison) unw++;\n"                  \
	"    ng += isnan(g) ? 1 : 0; ig += isinf(g) ? 1 : 0;\n"             \
	"    nw += isnan(v) ? 1 : 0; iw += isinf(v) ? 1 : 0;\n"             \
	"    if (isfinite(v)) { fin++; sum += v; sq += v * v;\n"               \
	"      mn = min(mn, order_key(v)); mx = max(mx, order_key(v)); }\n"    \
	"    if (isfinite(g) && isfinite(v)) {\n"                              \
	"      double d = fabs(g - v);\n"                                      \
	"      l1e += d; l1w += fabs(v);\n"                                    \
	"      tz += fabs(g) < fabs(v) ? 1 : 0; az += fabs(g) > fabs(v) ? 1 : 0;\n" \
	"      mabs = max(mabs, (u64)__double_as_longlong(d));\n"              \
	"      if (v != 0) mrel = max(mrel,\n"                                 \
	"          (u64)__double_as_longlong(d / fabs(v)));\n"                 \
	"    }\n"                                                              \
	"    double b = elem_badness(got, want, dt, i, atol, rtol);\n"        \
	"    if (b > 1) mism++;\n"                                             \
	"    worst = max(worst, (u64)__double_as_longlong(b));\n"              \
	"  }\n"                                                                \
	"  mism = wsum(mism); unw = wsum(unw); ng = wsum(ng); ig = wsum(ig);\n" \
	"  nw = wsum(nw); iw = wsum(iw); fin = wsum(fin); sum = wsumd(sum);\n" \
	"  sq = wsumd(sq); mabs = wmax(mabs); mrel = wmax(mrel);\n"            \
	"  l1e = wsumd(l1e); l1w = wsumd(l1w); tz = wsum(tz); az = wsum(az);\n" \
	"  worst = wmax(worst); mn = wmin(mn); mx = wmax(mx);\n"               \
	"  if ((threadIdx.x & 31) == 0) {\n"                                   \
	"    if (mism) atomicAdd(&s->mismatches, mism);\n"                     \
	"    if (unw) atomicAdd(&s->unwritten, unw);\n"                        \
	"    if (ng) atomicAdd(&s->nan_got, ng);\n"                            \
	"    if (ig) atomicAdd(&s->inf_got, ig);\n"                            \
	"    if (nw) atomicAdd(&s->nan_want, nw);\n"                           \
	"    if (iw) atomicAdd(&s->inf_want, iw);\n"                           \
	"    atomicAdd(&s->finite, fin);\n"                                    \
	"    atomicMax(&s->max_abs, mabs); atomicMax(&s->max_rel, mrel);\n"    \
	"    atomicMax(&s->worst, worst);\n"                                   \
	"    atomicMin(&s->min_key, mn); atomicMax(&s->max_key, mx);\n"        \
	"    atomicAdd(&s->sum, sum); atomicAdd(&s->sumsq, sq);\n"             \
	"    atomicAdd(&s->l1_err, l1e); atomicAdd(&s->l1_want, l1w);\n"       \
	"    if (tz) atomicAdd(&s->toward_zero, tz);\n"                        \
	"    if (az) atomicAdd(&s->away_from_zero, az);\n"                     \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"extern \"C\" __global__ void kf_worst(const void *got,\n"             \
	"    const void *want, int dt, i64 n, double atol, double rtol,\n"     \
	"    stats *s) {\n"                                                    \
	"  u64 target = s->worst;\n"                                           \
	"  GRID_LOOP(i, n) {\n"                                                \
	"    double b = elem_badness(got, want, dt, i, atol, rtol);\n"        \
	"    if ((u64)__double_as_longlong(b) == target)\n"                    \
	"      atomicMin(&s->worst_index, (u64)i);\n"                          \
	"  }\n"                                                                \
	"}\n"                                                                  \
	"__device__ u64 mix(u64 z) {\n"                                        \
	"  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;\n"                     \
	"  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;\n"                     \
	"  return z ^ (z >> 31);\n"                                            \
	"}\n"                                                                  \
	"extern \"C\" __global__ void kf_checksum(const unsigned char *p,\n"   \
	"    u64 bytes, u64 key, u64 *out) {\n"                                \
	"  u64 h = 0, words = bytes / 8;\n"                                    \
	"  if ((u64)p % 8) {\n"                                                \
	"    GRID_LOOP(j, (i64)bytes)\n"                                       \
	"      h += mix((u64)p[j] ^ mix(j * 0x9E3779B97F4A7C15ull + key));\n"  \
	"  } else {\n"                                                         \
	"    GRID_LOOP(i, (i64)words)\n"                                       \
	"      h += mix(((const u64 *)p)[i] ^ mix((u64)i + key));\n"           \
	"    if (blockIdx.x == 0 && threadIdx.x == 0)\n"                       \
	"      for (u64 j = words * 8; j < bytes; j++)\n"                      \
	"        h += mix((u64)p[j] ^ mix(j * 0x9E3779B97F4A7C15ull + key));\n"\
	"  }\n"                                                                \
	"  h = wsum(h);\n"                                                     \
	"  if ((threadIdx.x & 31) == 0) atomicAdd(out, h);\n"                  \
	"}\n"                                                                  \
	"__device__ " KF_NUDGE_ONE(KF_NUDGE_AS_TEXT) "\n"                     \
	"extern \"C\" __global__ void kf_nudge(u32 *x, i64 n, u64 seed,\n"    \
	"    int input) {\n"                                                   \
	"  GRID_LOOP(e, n) x[e] = kf_nudge_one(x[e], seed, e, input);\n"       \
	"}\n"

#endif
