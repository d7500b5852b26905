/*
 * queue.c: the bounded queue of evaluations: a request's jobs go in all or
 * none (srv_submit), the request waits for them (srv_wait), and a job still
 * queued at its deadline is taken off and done with an error. The workers
 * (server.c) take jobs from its head and finish them here.
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "server_int.h"

void srv_job_free(struct job *j)
{
	if (!j)
		return;
	free(j->task_path);
	free(j->source);
	free(j->error);
	free(j->label);
	cJSON_Delete(j->result);
	free(j);
}

void srv_job_finish(struct kf_server *s, struct job *j)
{
	/* under s->lock */
	j->state = JOB_DONE;
	j->batch->pending--;
	pthread_cond_broadcast(&s->done);
}

/* Seconds a client should wait before trying again: the queue's work
 * spread over the workers, at least 1, at most 300. */
static int retry_after_locked(struct kf_server *s)
{
	double mean = s->evaluations ? s->eval_seconds / s->evaluations
				     : s->o.eo.time_cap_s + 1;
	double t = (s->depth + s->running) * mean / s->o.workers;
	int r = (int)ceil(t);
	return r < 1 ? 1 : r > 300 ? 300 : r;
}

int srv_submit(struct kf_server *s, struct job **jobs, int n, struct batch *b,
	       int *retry_after)
{
	pthread_mutex_lock(&s->lock);
	if (s->stopping || s->depth + n > s->o.queue_cap) {
		*retry_after = retry_after_locked(s);
		s->rejected_busy++;
		pthread_mutex_unlock(&s->lock);
		return KF_ERANGE;
	}
	for (int i = 0; i < n; i++) {
		jobs[i]->batch = b;
		jobs[i]->state = JOB_QUEUED;
		jobs[i]->next = NULL;
		if (s->tail)
			s->tail->next = jobs[i];
		else
			s->head = jobs[i];
		s->tail = jobs[i];
		s->depth++;
	}
	b->pending += n;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Takes j off the queue; under the lock. */
static void unqueue(struct kf_server *s, struct job *j)
{
	struct job *prev = NULL;
	for (struct job *q = s->head; q; prev = q, q = q->next)
		if (q == j) {
			if (prev)
				prev->next = q->next;
			else
				s->head = q->next;
			if (s->tail == q)
				s->tail = prev;
			s->depth--;
			q->next = NULL;
			return;
		}
}

void srv_wait(struct kf_server *s, struct job **jobs, int n, struct batch *b)
{
	pthread_mutex_lock(&s->lock);
	while (b->pending > 0) {
		uint64_t now = kf_now_ns();
		uint64_t dl = UINT64_MAX;
		for (int i = 0; i < n; i++) {
			struct job *j = jobs[i];
			if (j->state != JOB_QUEUED)
				continue;
			if (now >= j->deadline_ns) {
				unqueue(s, j);
				j->error = kf_xstrdup(
				    "the request's deadline passed before "
				    "the evaluation started");
				s->deadline_misses++;
				srv_job_finish(s, j);
			} else if (j->deadline_ns < dl) {
				dl = j->deadline_ns;
			}
		}
		if (b->pending <= 0)
			break;
		/* Wake at the next deadline, or within a second. */
		uint64_t wait_ns = 1000000000ull;
		if (dl != UINT64_MAX && dl - now < wait_ns)
			wait_ns = dl - now + 1000000;
		srv_cond_wait(&s->done, &s->lock, wait_ns);
	}
	pthread_mutex_unlock(&s->lock);
}

void srv_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, uint64_t wait_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t t = (uint64_t)ts.tv_nsec + wait_ns;
	ts.tv_sec += (time_t)(t / 1000000000ull);
	ts.tv_nsec = (long)(t % 1000000000ull);
	pthread_cond_timedwait(c, m, &ts);
}
