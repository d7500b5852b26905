/*
 * Fast scan/cumsum (cuda): 2048-element tiles over many blocks, warp-shuffle
 * scans inside a tile, deterministic reduce-then-scan carries across the tiles
 * of a row (tile sums, a per-row scan of them, the tile scans), parked in y.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define ITEMS 8			     /* elements per lane */
#define SEG (32 * ITEMS)	     /* elements per warp: 256 */
#define TILE (THREADS * ITEMS)	     /* elements per block tile: 2048 */
#define FULL 0xffffffffu
#define MAX_GRID (1LL << 30)

/*
 * Tile t of a row covers [t * TILE, (t + 1) * TILE); warp w of its block the
 * segment [t * TILE + w * SEG, + SEG), lane l element j * 32 + l of it
 * (coalesced loads). Every addition happens in an order fixed by N alone, so
 * two calls give the same bits.
 *
 * Scratch: the carries of tiles travel through y[row, t * TILE] (the first
 * element of each tile), which only tile t's own scan overwrites, after it
 * has read it: kernel 1 parks the tile sums there, kernel 2 turns them into
 * exclusive prefix sums, kernel 3 reads its carry and writes the tile.
 */

__device__ static __forceinline__ double warp_incl_scan(double v, int lane)
{
#pragma unroll
	for (int o = 1; o < 32; o *= 2) {
		double u = __shfl_up_sync(FULL, v, o);
		if (lane >= o)
			v += u;
	}
	return v;
}

__device__ static __forceinline__ double warp_sum(double v)
{
#pragma unroll
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(FULL, v, o);
	return v;
}

/* Kernel 1: y[row, t * TILE] = sum of tile t of the row (multi-tile rows). */
__global__ static void __launch_bounds__(THREADS)
tile_sums(const double *__restrict__ x, double *__restrict__ y, long long N,
	  long long tiles, long long total)
{
	__shared__ double wsum[WARPS];
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;

	for (long long blk = blockIdx.x; blk < total; blk += gridDim.x) {
		long long row = blk / tiles, t = blk % tiles;
		const double *xr = x + row * N;
		long long base = t * TILE + w * SEG + lane;
		double v[ITEMS], s = 0.0;
#pragma unroll
		for (int j = 0; j < ITEMS; j++) {
			long long i = base + j * 32;
			v[j] = i < N ? xr[i] : 0.0;
		}
#pragma unroll
		for (int j = 0; j < ITEMS; j++)
			s += v[j];
		s = warp_sum(s);
		if (lane == 0)
			wsum[w] = s;
		__syncthreads();
		if (threadIdx.x == 0) {
			double tot = 0.0;
			for (int u = 0; u < WARPS; u++)
				tot += wsum[u];
			y[row * N + t * TILE] = tot;
		}
		__syncthreads(); /* wsum is reused next tile */
	}
}

/* Kernel 2: one warp per row; the tile sums in y[row, t * TILE] become the
 * exclusive prefix sums (the carry into tile t). */
__global__ static void __launch_bounds__(THREADS)
tile_carries(double *__restrict__ y, long long B, long long N, long long tiles)
{
	int lane = threadIdx.x % 32;
	long long row = blockIdx.x * (long long)WARPS + threadIdx.x / 32;
	if (row >= B)
		return; /* whole warps; no block barrier in this kernel */
	double *yr = y + row * N;
	double run = 0.0;

	for (long long c0 = 0; c0 < tiles; c0 += 32) {
		long long t = c0 + lane;
		double v = t < tiles ? yr[t * TILE] : 0.0;
		double inc = warp_incl_scan(v, lane);
		double exc = __shfl_up_sync(FULL, inc, 1);
		if (lane == 0)
			exc = 0.0;
		if (t < tiles)
			yr[t * TILE] = run + exc;
		run += __shfl_sync(FULL, inc, 31);
	}
}

/* Kernel 3: inclusive scan of each tile plus its carry (none when carry is
 * false: rows of a single tile). */
__global__ static void __launch_bounds__(THREADS)
tile_scan(const double *__restrict__ x, double *__restrict__ y, long long N,
	  long long tiles, long long total, bool carry)
{
	__shared__ double wtot[WARPS];
	__shared__ double tile_carry;
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;

	for (long long blk = blockIdx.x; blk < total; blk += gridDim.x) {
		long long row = blk / tiles, t = blk % tiles;
		const double *xr = x + row * N;
		double *yr = y + row * N;
		long long base = t * TILE + w * SEG + lane;

		/* read before any thread of this block writes the tile */
		if (threadIdx.x == 0)
			tile_carry = carry ? yr[t * TILE] : 0.0;

		double v[ITEMS];
#pragma unroll
		for (int j = 0; j < ITEMS; j++) {
			long long i = base + j * 32;
			v[j] = i < N ? xr[i] : 0.0;
		}
		/* the warp's segment, 32 elements at a time */
		double run = 0.0;
#pragma unroll
		for (int j = 0; j < ITEMS; j++) {
			double s = warp_incl_scan(v[j], lane);
			v[j] = run + s;
			run += __shfl_sync(FULL, s, 31);
		}
		if (lane == 0)
			wtot[w] = run;
		__syncthreads();
		double off = tile_carry;
		for (int u = 0; u < w; u++)
			off += wtot[u];
#pragma unroll
		for (int j = 0; j < ITEMS; j++) {
			long long i = base + j * 32;
			if (i < N)
				__stcs(yr + i, off + v[j]);
		}
		__syncthreads(); /* wtot, tile_carry are reused next tile */
	}
}

static unsigned grid_of(long long blocks)
{
	return (unsigned)(blocks < MAX_GRID ? blocks : MAX_GRID);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const double *x = (const double *)in[0].data;
	double *y = (double *)out[0].data;
	long long B = in[0].shape[0], N = in[0].shape[1];
	long long tiles = (N + TILE - 1) / TILE, total = B * tiles;
	cudaStream_t s = (cudaStream_t)stream;

	if (tiles > 1) {
		tile_sums<<<grid_of(total), THREADS, 0, s>>>(x, y, N, tiles,
							      total);
		tile_carries<<<grid_of((B + WARPS - 1) / WARPS), THREADS, 0,
			       s>>>(y, B, N, tiles);
	}
	tile_scan<<<grid_of(total), THREADS, 0, s>>>(x, y, N, tiles, total,
						      tiles > 1);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
