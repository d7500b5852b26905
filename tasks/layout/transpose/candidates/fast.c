/*
 * fast.c: layout/transpose candidate: cache-blocked transpose. 128 x 128
 * blocks keep the lines being read and written in cache, and inside a block
 * 8 x 8 tiles are transposed in registers (SSE2 interleaves where present).
 */
#include <kforge/kernel.h>

#define BLK 128 /* block side, elements */
#define T 8	/* register tile side */

#ifdef __SSE2__
#include <emmintrin.h>

/* One whole 8 x 8 tile: y[c][r] = x[r][c], leading dims ldx, ldy. Three
 * rounds of interleaving (16-, 32-, 64-bit lanes) turn rows into columns. */
static inline void tile8(const uint16_t *x, int64_t ldx, uint16_t *y,
			 int64_t ldy)
{
	__m128i a[T], b[T], c[T];

	for (int r = 0; r < T; r++)
		a[r] = _mm_loadu_si128((const __m128i *)(x + r * ldx));
	for (int r = 0; r < T; r += 2) {
		b[r] = _mm_unpacklo_epi16(a[r], a[r + 1]);
		b[r + 1] = _mm_unpackhi_epi16(a[r], a[r + 1]);
	}
	/* b[0], b[2]: rows 0-1 and 2-3, columns 0-3; b[1], b[3]: columns 4-7 */
	for (int h = 0; h < 2; h++) {
		c[4 * h + 0] = _mm_unpacklo_epi32(b[4 * h + 0], b[4 * h + 2]);
		c[4 * h + 1] = _mm_unpackhi_epi32(b[4 * h + 0], b[4 * h + 2]);
		c[4 * h + 2] = _mm_unpacklo_epi32(b[4 * h + 1], b[4 * h + 3]);
		c[4 * h + 3] = _mm_unpackhi_epi32(b[4 * h + 1], b[4 * h + 3]);
	}
	/* c[k]: columns 2k, 2k + 1 of rows 0-3; c[4 + k]: same of rows 4-7 */
	for (int k = 0; k < 4; k++) {
		_mm_storeu_si128((__m128i *)(y + 2 * k * ldy),
				 _mm_unpacklo_epi64(c[k], c[4 + k]));
		_mm_storeu_si128((__m128i *)(y + (2 * k + 1) * ldy),
				 _mm_unpackhi_epi64(c[k], c[4 + k]));
	}
}
#else
/* One whole 8 x 8 tile: y[c][r] = x[r][c], leading dims ldx, ldy. */
static inline void tile8(const uint16_t *x, int64_t ldx, uint16_t *y,
			 int64_t ldy)
{
	for (int r = 0; r < T; r++)
		for (int c = 0; c < T; c++)
			y[c * ldy + r] = x[r * ldx + c];
}
#endif

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *x = in[0].data; /* [M, N] half */
	uint16_t *y = out[0].data;	/* [N, M] half */
	int64_t M = in[0].shape[0], N = in[0].shape[1];
	int64_t Mt = M - M % T, Nt = N - N % T; /* extent of whole tiles */

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t i0 = 0; i0 < Mt; i0 += BLK) {
		int64_t i1 = i0 + BLK < Mt ? i0 + BLK : Mt;
		for (int64_t j0 = 0; j0 < Nt; j0 += BLK) {
			int64_t j1 = j0 + BLK < Nt ? j0 + BLK : Nt;
			/* i innermost: successive tiles fill the same 8
			 * output lines, which then leave cache complete */
			for (int64_t j = j0; j < j1; j += T)
				for (int64_t i = i0; i < i1; i += T)
					tile8(x + i * N + j, N, y + j * M + i,
					      M);
		}
	}
	for (int64_t i = 0; i < M; i++) /* right edge: columns Nt.. */
		for (int64_t j = Nt; j < N; j++)
			y[j * M + i] = x[i * N + j];
	for (int64_t i = Mt; i < M; i++) /* bottom edge: rows Mt.. */
		for (int64_t j = 0; j < Nt; j++)
			y[j * M + i] = x[i * N + j];
	return 0;
}
