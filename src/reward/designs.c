/*
 * designs.c: the built-in reward designs (docs/rewards.md gives each formula
 * and its source): clipped log-speedup, CUDA-L1's group-normalised speedup,
 * MusaCoder's piecewise reward and LEAP's tournament rank.
 */
#include <math.h>
#include <stdlib.h>

#include "reward_int.h"

static double clamp(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/*
 * log_speedup: correct: clip(ln s, -clip, clip); incorrect: -clip -
 * separation, below every correct reward.
 */
enum { LOG_CLIP, LOG_SEPARATION };

static const struct kf_reward_param log_params[] = {
    {"clip", 3.0, 1e-6, 1e3, "|ln speedup| is clipped here"},
    {"separation", 1.0, 1e-6, 1e6,
     "incorrect items score this far below -clip"},
};

static double log_item(const struct kf_reward_item *it, const double *p)
{
	if (!kf_reward_item_correct(it))
		return -p[LOG_CLIP] - p[LOG_SEPARATION];
	return clamp(log(kf_reward_item_speedup(it)), -p[LOG_CLIP],
		     p[LOG_CLIP]);
}

const struct kf_reward_ops kf_reward_log_speedup_ops = {
    .version = KF_REWARD_OPS_VERSION,
    .name = "log_speedup",
    .doc = "clipped log-speedup; incorrect below the clip",
    .params = log_params,
    .n_params = 2,
    .item = log_item,
};

/*
 * cuda_l1: correct: z = (s - mean) / std over the group's correct items
 * (population std; z = 0 when std is 0), clipped at +-clip; incorrect:
 * -clip - separation.
 */
enum { L1_CLIP, L1_SEPARATION };

static const struct kf_reward_param l1_params[] = {
    {"clip", 1.5, 1e-6, 1e3, "normalised speedups are clipped at +-clip"},
    {"separation", 1.0, 1e-6, 1e6,
     "incorrect items score this far below -clip"},
};

static void l1_group(const struct kf_reward_item *items, size_t n,
		     const double *p, double *out)
{
	double *s = kf_xcalloc(n, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		s[i] = kf_reward_item_correct(&items[i])
			   ? kf_reward_item_speedup(&items[i])
			   : NAN;
	double mean, std;
	size_t m;
	kf_reward_moments(s, n, 0, &mean, &std, &m);
	for (size_t i = 0; i < n; i++) {
		if (isnan(s[i])) {
			out[i] = -p[L1_CLIP] - p[L1_SEPARATION];
			continue;
		}
		double z = std > 0 ? (s[i] - mean) / std : 0.0;
		out[i] = clamp(z, -p[L1_CLIP], p[L1_CLIP]);
	}
	free(s);
}

const struct kf_reward_ops kf_reward_cuda_l1_ops = {
    .version = KF_REWARD_OPS_VERSION,
    .name = "cuda_l1",
    .doc = "CUDA-L1: group-normalised speedup clipped at +-1.5",
    .params = l1_params,
    .n_params = 2,
    .group = l1_group,
};

/*
 * musacoder: correct: 1 + lambda * min(max(s - 1, 0), s_max); partially
 * correct (compiled, not rejected, q > 0): -0.5 + 0.5 q; otherwise -1.
 */
enum { MUSA_LAMBDA, MUSA_SMAX };

static const struct kf_reward_param musa_params[] = {
    {"lambda", 0.5, 0.0, 1e3, "weight of the speedup bonus"},
    {"s_max", 3.0, 0.0, 1e6, "cap of the bonus term max(s - 1, 0)"},
};

static double musa_item(const struct kf_reward_item *it, const double *p)
{
	if (kf_reward_item_correct(it)) {
		double gain = fmax(kf_reward_item_speedup(it) - 1.0, 0.0);
		return 1.0 + p[MUSA_LAMBDA] * fmin(gain, p[MUSA_SMAX]);
	}
	double q = kf_reward_item_q(it);
	if (it->compiled && it->status != KF_STATUS_REJECTED && q > 0)
		return -0.5 + 0.5 * q;
	return -1.0;
}

const struct kf_reward_ops kf_reward_musacoder_ops = {
    .version = KF_REWARD_OPS_VERSION,
    .name = "musacoder",
    .doc = "MusaCoder: -1 failure, -0.5+0.5q partial, 1+bonus correct",
    .params = musa_params,
    .n_params = 2,
    .item = musa_item,
};

/*
 * leap_rank: a round robin within the group. A correct item beats an
 * incorrect one; two correct items are decided by speedup, a tie when they
 * differ by at most tie_tol of the larger; two incorrect items tie. Reward:
 * (wins - losses) / (n - 1), in [-1, 1]; 0 for a group of one.
 */
enum { LEAP_TIE };

static const struct kf_reward_param leap_params[] = {
    {"tie_tol", 0.01, 0.0, 1.0,
     "relative speedup difference that counts as a tie"},
};

/* +1 when a beats b, -1 when b beats a, 0 for a tie. */
static int leap_game(const struct kf_reward_item *a,
		     const struct kf_reward_item *b, double tie_tol)
{
	int ca = kf_reward_item_correct(a), cb = kf_reward_item_correct(b);
	if (ca != cb)
		return ca ? 1 : -1;
	if (!ca)
		return 0;
	double sa = kf_reward_item_speedup(a), sb = kf_reward_item_speedup(b);
	if (fabs(sa - sb) <= tie_tol * fmax(sa, sb))
		return 0;
	return sa > sb ? 1 : -1;
}

static void leap_group(const struct kf_reward_item *items, size_t n,
		       const double *p, double *out)
{
	for (size_t i = 0; i < n; i++) {
		long score = 0;
		for (size_t j = 0; j < n; j++)
			if (j != i)
				score += leap_game(&items[i], &items[j],
						   p[LEAP_TIE]);
		out[i] = n > 1 ? (double)score / (double)(n - 1) : 0.0;
	}
}

const struct kf_reward_ops kf_reward_leap_rank_ops = {
    .version = KF_REWARD_OPS_VERSION,
    .name = "leap_rank",
    .doc = "LEAP: rank from pairwise games within the group, in [-1, 1]",
    .params = leap_params,
    .n_params = 1,
    .group = leap_group,
};
