/*
 * search_int.h: shared inside src/search: the progress display of the loop
 * (one redrawn line on a terminal, one plain line per evaluation otherwise).
 */
#ifndef KFORGE_SEARCH_INT_H
#define KFORGE_SEARCH_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <kforge/base.h>

#define KF_PROGRESS_STATUSES 9 /* the eight statuses, then anything else */

struct kf_progress {
	FILE *f; /* borrowed */
	bool tty;
	bool drawn; /* a bar is on the current line */
	int budget;
	double time_limit_s;
	uint64_t t0_ns, last_draw_ns;
	int done;    /* evaluations of the run */
	int session; /* of this session */
	int running;
	int counts[KF_PROGRESS_STATUSES];
	double best;
	int64_t best_id;
};

void kf_progress_init(struct kf_progress *p, FILE *f, bool tty, int budget,
		      double time_limit_s);
/* The first line: which run, what it optimizes, how far it got. */
void kf_progress_start(struct kf_progress *p, int64_t run, const char *task,
		       const char *backend, const char *policy, int parallel,
		       bool resumed, int evaluated);
/* An evaluation of an earlier session (counted, not printed). */
void kf_progress_history(struct kf_progress *p, int64_t id, const char *status,
			 double speedup);
/* An evaluation of this session, already stored; short_cap_s > 0: a short
 * timing under that cap (shown as such, never the best). */
void kf_progress_result(struct kf_progress *p, int evaluated, int64_t id,
			const char *status, double speedup, const cJSON *result,
			const cJSON *params, double short_cap_s);
/* A line for the user, above the bar. */
void kf_progress_note(struct kf_progress *p, const char *line);
/* Redraws the bar when a second has passed (time left changes). */
void kf_progress_tick(struct kf_progress *p);
/* Leaves the bar's line. */
void kf_progress_end(struct kf_progress *p);
void kf_progress_release(struct kf_progress *p);

/*
 * The result of the candidate at path from the table KFORGE_SCORES names,
 * in place of an evaluation: JSON lines, the first whose "contains" is a
 * substring of the source, or whose "code" (or "source") is the same code
 * (kf_prompt_same_code), gives its "result", an export line's
 * "evaluation.result", or one made of "status" (default ok), "speedup" and
 * "fraction" (roofline). KF_ENOENT when no line matches.
 */
int kf_search_score(const char *table, const char *path, cJSON **out,
		    struct kf_err *err);

/* Index of a status name in the progress counts. */
int kf_progress_status_index(const char *status);
/* Name of a progress count index. */
const char *kf_progress_status_name(int i);

#endif
