/*
 * attention_causal.h: the causal mask, the plain score and the [B, H, S, D]
 * geometry (k and v [B, HKV, S, D]) that attention_flash.h's causal and
 * grouped-query cases of the corpus share; the including file then names
 * its element type (LDX, STX0) and its cuts.
 */
#define HD static

/* whether query position i attends to key position j */
HD bool keep(int64_t i, int64_t j)
{
	return j <= i;
}

/* the score of head h of H, query i, key j, from the scaled dot s */
HD float mod(float s, int64_t h, int64_t H, int64_t i, int64_t j)
{
	(void)h;
	(void)H;
	(void)i;
	(void)j;
	return s;
}

/* q, o [B, H, S, D]; k, v [B, HKV, S, D] */
struct geo {
	int64_t B, H, HKV, S, D;
};
HD int64_t nseq(const struct geo *g) { return g->B; }
HD void seq(const struct geo *g, const int32_t *lens, const int32_t *ctx,
	    int64_t b, int64_t *start, int64_t *sq, int64_t *skv)
{
	(void)lens;
	(void)ctx;
	(void)b;
	*start = 0;
	*sq = *skv = g->S;
}
HD int64_t qrow(const struct geo *g, int64_t b, int64_t start, int64_t i,
		int64_t h)
{
	(void)start;
	return ((b * g->H + h) * g->S + i) * g->D;
}
HD int64_t krow(const struct geo *g, const int32_t *bt, int64_t b,
		int64_t start, int64_t j, int64_t hk)
{
	(void)bt;
	(void)start;
	return ((b * g->HKV + hk) * g->S + j) * g->D;
}
