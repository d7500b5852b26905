/*
 * progress.c: what the loop shows while it runs. On a terminal, one line
 * redrawn in place (best speedup so far, evaluations, failures by status,
 * time left); otherwise one plain line per evaluation, for logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

static const char *const names[KF_PROGRESS_STATUSES] = {
    "ok",	    "compile_error", "load_error",  "runtime_error", "timeout",
    "wrong_answer", "rejected",	     "infra_error", "other",
};

int kf_progress_status_index(const char *status)
{
	for (int i = 0; status && i < KF_PROGRESS_STATUSES - 1; i++)
		if (!strcmp(status, names[i]))
			return i;
	return KF_PROGRESS_STATUSES - 1;
}

const char *kf_progress_status_name(int i)
{
	return names[i];
}

void kf_progress_init(struct kf_progress *p, FILE *f, bool tty, int budget,
		      double time_limit_s)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->tty = tty;
	p->budget = budget;
	p->time_limit_s = time_limit_s;
	p->t0_ns = kf_now_ns();
}

static void count(struct kf_progress *p, int64_t id, const char *status,
		  double speedup)
{
	int k = kf_progress_status_index(status);
	p->counts[k]++;
	if (k == 0 && speedup > p->best) {
		p->best = speedup;
		p->best_id = id;
	}
}

void kf_progress_start(struct kf_progress *p, int64_t run, const char *task,
		       const char *backend, const char *policy, int parallel,
		       bool resumed, int evaluated)
{
	p->done = evaluated;
	if (!p->f)
		return;
	if (resumed && evaluated >= p->budget)
		fprintf(p->f,
			"run %lld is finished: %s (%s), policy %s, %d of %d "
			"evaluations done; nothing to resume\n",
			(long long)run, task, backend, policy, evaluated,
			p->budget);
	else if (resumed)
		fprintf(p->f,
			"resuming run %lld: %s (%s), policy %s, %d of %d "
			"evaluations done, %d at a time\n",
			(long long)run, task, backend, policy, evaluated,
			p->budget, parallel);
	else
		fprintf(p->f,
			"run %lld: %s (%s), policy %s, budget %d evaluations, "
			"%d at a time\n",
			(long long)run, task, backend, policy, p->budget,
			parallel);
	fflush(p->f);
}

void kf_progress_history(struct kf_progress *p, int64_t id, const char *status,
			 double speedup)
{
	count(p, id, status, speedup);
}

/* "1m05s", "12s" */
static void fmt_secs(double s, char *buf, size_t n)
{
	if (s < 0)
		s = 0;
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, n, "%lds", t);
}

/* Failures by status: "compile_error 2, wrong_answer 1" or "none". */
static void failures(const struct kf_progress *p, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 1; i < KF_PROGRESS_STATUSES && len < n; i++)
		if (p->counts[i])
			len += (size_t)snprintf(buf + len, n - len, "%s%s %d",
						len ? ", " : "", names[i],
						p->counts[i]);
	if (!len)
		snprintf(buf, n, "none");
}

static void clear(struct kf_progress *p)
{
	if (p->tty && p->drawn) {
		fputs("\r\033[K", p->f);
		p->drawn = false;
	}
}

/* The time left, from this session's pace and the time limit, into buf
 * ("?" before the first evaluation of a run without a limit). */
static void eta(const struct kf_progress *p, char *buf, size_t n)
{
	double elapsed = (double)(kf_now_ns() - p->t0_ns) * 1e-9;
	snprintf(buf, n, "?");
	if (p->session > 0) {
		double est = elapsed / p->session * (p->budget - p->done);
		if (p->time_limit_s > 0 && p->time_limit_s - elapsed < est)
			est = p->time_limit_s - elapsed;
		fmt_secs(est, buf, n);
	} else if (p->time_limit_s > 0) {
		fmt_secs(p->time_limit_s - elapsed, buf, n);
	}
}

static void draw(struct kf_progress *p)
{
	if (!p->f || !p->tty)
		return;
	char left[32], fail[256], best[64] = "-";
	eta(p, left, sizeof(left));
	if (p->best_id)
		snprintf(best, sizeof(best), "%.3fx (#%lld)", p->best,
			 (long long)p->best_id);
	failures(p, fail, sizeof(fail));
	int width = 20;
	int fill = p->budget ? (int)((long)p->done * width / p->budget) : 0;
	char bar[32];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	clear(p);
	fprintf(p->f, "[%s] %d/%d  best %s  failed: %.60s  ~%s left", bar,
		p->done, p->budget, best, fail, left);
	fflush(p->f);
	p->drawn = true;
	p->last_draw_ns = kf_now_ns();
}

/* "LANES=32 ROWS=2" into buf. */
static void params_str(const cJSON *params, char *buf, size_t n)
{
	size_t len = 0;
	const cJSON *v;
	buf[0] = '\0';
	cJSON_ArrayForEach(v, params)
	{
		if (len >= n)
			break;
		len += (size_t)snprintf(
		    buf + len, n - len, "%s%s=%s", len ? " " : "", v->string,
		    cJSON_IsString(v) ? v->valuestring : "?");
	}
}

void kf_progress_result(struct kf_progress *p, int evaluated, int64_t id,
			const char *status, double speedup, const cJSON *result,
			const cJSON *params, double short_cap_s)
{
	p->done = evaluated;
	p->session++;
	count(p, id, status, short_cap_s > 0 ? 0 : speedup);
	if (!p->f)
		return;
	const char *reason = kf_json_str(result, "reason");
	const char *check = kf_json_str(result, "check");
	bool ok = !strcmp(status, "ok");
	char ps[256];
	params_str(params, ps, sizeof(ps));
	if (p->tty) {
		/* A failure's whole reason, above the bar. */
		if (!ok) {
			clear(p);
			fprintf(p->f, "#%lld %s%s%s%s%s%s%s\n", (long long)id,
				status, check ? "/" : "", check ? check : "",
				reason && *reason ? ": " : "",
				reason ? reason : "", *ps ? "  " : "", ps);
		}
		draw(p);
		return;
	}
	char what[128], left[32], best[64] = "-";
	char shortcap[48] = "";
	if (short_cap_s > 0)
		snprintf(shortcap, sizeof(shortcap), "short timing (cap %gs) ",
			 short_cap_s);
	if (ok && speedup > 0)
		snprintf(what, sizeof(what), "%sok %.3fx", shortcap, speedup);
	else if (ok)
		snprintf(what, sizeof(what), "ok (not timed)");
	else
		snprintf(what, sizeof(what), "%s%s%s%s", shortcap, status,
			 check ? "/" : "", check ? check : "");
	if (p->best_id)
		snprintf(best, sizeof(best), "%.3fx (#%lld)", p->best,
			 (long long)p->best_id);
	eta(p, left, sizeof(left));
	fprintf(p->f, "[%d/%d] #%lld %s  best %s  ~%s left%s%s\n", p->done,
		p->budget, (long long)id, what, best, left, *ps ? "  " : "",
		ps);
	/* A failure's whole reason, on a line of its own. */
	if (!ok && reason && *reason)
		fprintf(p->f, "    %s\n", reason);
	fflush(p->f);
}

void kf_progress_note(struct kf_progress *p, const char *line)
{
	if (!p->f)
		return;
	clear(p);
	fprintf(p->f, "kforge: %s\n", line);
	fflush(p->f);
	if (p->tty && p->session)
		draw(p);
}

void kf_progress_tick(struct kf_progress *p)
{
	if (p->f && p->tty && kf_now_ns() - p->last_draw_ns > 1000000000ull)
		draw(p);
}

void kf_progress_end(struct kf_progress *p)
{
	if (p->f && p->tty && p->drawn) {
		fputc('\n', p->f);
		fflush(p->f);
		p->drawn = false;
	}
}

void kf_progress_release(struct kf_progress *p)
{
	memset(p, 0, sizeof(*p));
}
