/*
 * retry.c: the retry buffer: a bounded FIFO of prompts whose every rollout
 * failed, taken out later for another try. A full buffer drops its oldest
 * prompt, so that the prompts retried are the most recent failures.
 */
#include <stdlib.h>
#include <string.h>

#include "reward_int.h"

struct kf_reward_retry {
	char **ids;	 /* ring of capacity slots, owned strings */
	size_t capacity; /* slots */
	size_t head;	 /* index of the oldest */
	size_t len;	 /* prompts waiting */
	size_t evicted;
};

int kf_reward_retry_new(size_t capacity, struct kf_reward_retry **out,
			struct kf_err *err)
{
	if (capacity == 0 || capacity > KF_REWARD_RETRY_MAX)
		return kf_err_set(err, KF_EINVAL,
				  "retry buffer: capacity must be between 1 "
				  "and %u, got %zu",
				  KF_REWARD_RETRY_MAX, capacity);
	struct kf_reward_retry *b = kf_xcalloc(1, sizeof(*b));
	b->ids = kf_xcalloc(capacity, sizeof(*b->ids));
	b->capacity = capacity;
	*out = b;
	return 0;
}

void kf_reward_retry_free(struct kf_reward_retry *b)
{
	if (!b)
		return;
	while (b->len)
		free(kf_reward_retry_take(b));
	free(b->ids);
	free(b);
}

static bool waiting(const struct kf_reward_retry *b, const char *id)
{
	for (size_t k = 0; k < b->len; k++)
		if (!strcmp(b->ids[(b->head + k) % b->capacity], id))
			return true;
	return false;
}

int kf_reward_retry_offer(struct kf_reward_retry *b, const char *prompt_id,
			  const struct kf_reward_item *items, size_t n,
			  struct kf_err *err)
{
	size_t bytes =
	    prompt_id ? strnlen(prompt_id, KF_REWARD_PROMPT_CAP + 1) : 0;
	if (bytes == 0)
		return kf_err_set(err, KF_EINVAL,
				  "retry buffer: empty prompt id");
	if (bytes > KF_REWARD_PROMPT_CAP)
		return kf_err_set(err, KF_EINVAL,
				  "retry buffer: prompt id longer than %d "
				  "bytes",
				  KF_REWARD_PROMPT_CAP);
	size_t scored = 0;
	for (size_t i = 0; i < n; i++) {
		if (!kf_reward_item_scored(&items[i]))
			continue;
		if (kf_reward_item_correct(&items[i]))
			return 0;
		scored++;
	}
	if (scored == 0 || waiting(b, prompt_id))
		return 0;
	if (b->len == b->capacity) {
		free(kf_reward_retry_take(b));
		b->evicted++;
	}
	b->ids[(b->head + b->len) % b->capacity] = kf_xstrdup(prompt_id);
	b->len++;
	return 1;
}

char *kf_reward_retry_take(struct kf_reward_retry *b)
{
	if (b->len == 0)
		return NULL;
	char *id = b->ids[b->head];
	b->ids[b->head] = NULL;
	b->head = (b->head + 1) % b->capacity;
	b->len--;
	return id;
}

size_t kf_reward_retry_len(const struct kf_reward_retry *b)
{
	return b->len;
}

size_t kf_reward_retry_evicted(const struct kf_reward_retry *b)
{
	return b->evicted;
}
