/*
 * group.c: what trainers compute over groups and turns of rewards: GRPO
 * advantages, the first-turn-anchored multi-turn reward, and the pruning
 * decision that gives hard groups further turns.
 */
#include <math.h>

#include "reward_int.h"

void kf_reward_moments(const double *x, size_t n, int ddof, double *mean,
		       double *std, size_t *m)
{
	size_t k = 0;
	double x0 = 0, sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i]))
			continue;
		if (k++ == 0)
			x0 = x[i];
		sum += x[i] - x0;
	}
	*m = k;
	*mean = k ? x0 + sum / (double)k : NAN;
	*std = 0;
	if (k == 0 || (double)k - ddof <= 0)
		return;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			ss += (x[i] - *mean) * (x[i] - *mean);
	*std = sqrt(ss / ((double)k - ddof));
}

int kf_reward_grpo(const double *rewards, size_t n, double eps, int ddof,
		   double *adv, struct kf_err *err)
{
	if (!(eps >= 0) || isinf(eps))
		return kf_err_set(err, KF_EINVAL,
				  "grpo: eps must be a finite number >= 0, "
				  "got %g",
				  eps);
	if (ddof != 0 && ddof != 1)
		return kf_err_set(err, KF_EINVAL,
				  "grpo: ddof must be 0 or 1, got %d", ddof);
	for (size_t i = 0; i < n; i++)
		if (isinf(rewards[i]))
			return kf_err_set(err, KF_EINVAL,
					  "grpo: reward %zu is infinite", i);
	double mean, std;
	size_t m;
	kf_reward_moments(rewards, n, ddof, &mean, &std, &m);
	for (size_t i = 0; i < n; i++) {
		if (isnan(rewards[i]))
			adv[i] = NAN;
		else if (std + eps > 0)
			adv[i] = (rewards[i] - mean) / (std + eps);
		else
			adv[i] = 0; /* eps 0 and equal rewards */
	}
	return 0;
}

int kf_reward_anchor(const double *turns, size_t n, double alpha, double *out,
		     struct kf_err *err)
{
	if (!(alpha >= 0 && alpha <= 1))
		return kf_err_set(err, KF_EINVAL,
				  "anchor: alpha must be between 0 and 1, "
				  "got %g",
				  alpha);
	double first = NAN, best = NAN;
	for (size_t i = 0; i < n; i++) {
		if (isinf(turns[i]))
			return kf_err_set(err, KF_EINVAL,
					  "anchor: the reward of turn %zu is "
					  "infinite",
					  i);
		if (isnan(turns[i]))
			continue;
		if (isnan(first))
			first = best = turns[i];
		else if (turns[i] > best)
			best = turns[i];
	}
	*out = isnan(first) ? NAN : alpha * first + (1 - alpha) * best;
	return 0;
}

double kf_reward_fail_share(const struct kf_reward_item *first, size_t n)
{
	size_t scored = 0, failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!kf_reward_item_scored(&first[i]))
			continue;
		scored++;
		failed += !kf_reward_item_correct(&first[i]);
	}
	return scored ? (double)failed / (double)scored : NAN;
}

int kf_reward_prune(const struct kf_reward_item *first, size_t n,
		    double threshold, enum kf_reward_turns *out,
		    struct kf_err *err)
{
	if (!(threshold >= 0 && threshold <= 1))
		return kf_err_set(err, KF_EINVAL,
				  "prune: threshold must be between 0 and 1, "
				  "got %g",
				  threshold);
	double share = kf_reward_fail_share(first, n);
	if (isnan(share))
		*out = KF_REWARD_UNKNOWN;
	else
		*out = share >= threshold ? KF_REWARD_CONTINUE : KF_REWARD_STOP;
	return 0;
}
