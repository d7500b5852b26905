/* reward_int.h: shared inside src/reward: the built-in designs and the group
 * statistics they share with the GRPO advantages. */
#ifndef KFORGE_REWARD_INT_H
#define KFORGE_REWARD_INT_H

#include <kforge/reward.h>

extern const struct kf_reward_ops kf_reward_log_speedup_ops;
extern const struct kf_reward_ops kf_reward_cuda_l1_ops;
extern const struct kf_reward_ops kf_reward_musacoder_ops;
extern const struct kf_reward_ops kf_reward_leap_rank_ops;

/* The item's pass fraction clamped to [0, 1], NaN read as 0. */
double kf_reward_item_q(const struct kf_reward_item *it);

/*
 * Mean and standard deviation of the entries of x[0..n) that are not NaN
 * (*m of them), the std dividing by *m - ddof (0 when that is not positive).
 * The mean is taken as x0 + mean(x - x0) around the first entry, so that
 * equal entries give exactly their value and a std of exactly 0.
 */
void kf_reward_moments(const double *x, size_t n, int ddof, double *mean,
		       double *std, size_t *m);

#endif
