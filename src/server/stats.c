/*
 * stats.c: the reward service's statistics as /v1/stats's JSON
 * (kf_server_stats) and /metrics's Prometheus text (kf_server_metrics),
 * and the latency histograms' counting. It reads the counters the other
 * parts keep in struct kf_server, under the server's lock.
 */
#include <string.h>

#include <kforge/farm_redis.h>

#include "server_int.h"

/* Counts x seconds in the bucket of a latency histogram. */
void srv_hist_add(long *h, double x)
{
	static const double bound[] = SRV_HIST_BOUNDS;
	int b = 0;
	while (b < SRV_HIST_BUCKETS - 1 && x > bound[b])
		b++;
	h[b]++;
}

cJSON *kf_server_stats(struct kf_server *s)
{
	cJSON *o = cJSON_CreateObject();
	pthread_mutex_lock(&s->lock);
	cJSON_AddNumberToObject(o, "queue_depth", s->depth);
	cJSON_AddNumberToObject(o, "queue_capacity", s->o.queue_cap);
	cJSON_AddNumberToObject(o, "busy_workers", s->running);
	cJSON_AddNumberToObject(o, "workers", s->o.workers);
	/* Every queued item still has its compile ahead of it. */
	cJSON_AddNumberToObject(o, "compile_backlog", s->depth);
	cJSON_AddNumberToObject(o, "requests", (double)s->requests);
	cJSON_AddNumberToObject(o, "items", (double)s->items);
	cJSON_AddNumberToObject(o, "evaluations", (double)s->evaluations);
	cJSON_AddNumberToObject(o, "dedup_hits", (double)s->dedup_hits);
	cJSON_AddNumberToObject(o, "rejected_busy", (double)s->rejected_busy);
	cJSON_AddNumberToObject(o, "errors_4xx", (double)s->errors_4xx);
	cJSON_AddNumberToObject(o, "errors_5xx", (double)s->errors_5xx);
	cJSON_AddNumberToObject(o, "deadline_misses",
				(double)s->deadline_misses);
	cJSON_AddNumberToObject(
	    o, "mean_eval_seconds",
	    s->evaluations ? s->eval_seconds / s->evaluations : 0);
	cJSON *st = cJSON_AddObjectToObject(o, "statuses");
	for (int i = 0; i <= KF_STATUS_INFRA_ERROR; i++)
		cJSON_AddNumberToObject(st, kf_status_name((enum kf_status)i),
					(double)s->status_count[i]);
	cJSON_AddNumberToObject(o, "episodes_open", s->n_episodes);
	cJSON_AddNumberToObject(o, "groups_open", s->n_groups);
	cJSON_AddNumberToObject(o, "groups_incomplete",
				(double)s->groups_incomplete);
	cJSON_AddNumberToObject(o, "uptime_s",
				(double)(kf_now_ns() - s->started_ns) / 1e9);
	if (s->o.redis) {
		cJSON *f = cJSON_AddObjectToObject(o, "farm");
		cJSON_AddNumberToObject(f, "jobs", (double)s->farm_jobs);
		cJSON_AddNumberToObject(f, "retried", (double)s->farm_retried);
		cJSON_AddNumberToObject(f, "duplicates",
					(double)s->farm_duplicates);
		cJSON_AddNumberToObject(f, "abandoned",
					(double)s->farm_abandoned);
		cJSON_AddNumberToObject(f, "reconnects",
					(double)s->farm_reconnects);
	}
	pthread_mutex_unlock(&s->lock);
	return o;
}

/* One metric's HELP and TYPE lines. */
static void metric_head(struct kf_strbuf *b, const char *name, const char *type,
			const char *help)
{
	kf_strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		       type);
}

static void metric(struct kf_strbuf *b, const char *name, const char *type,
		   const char *help, double v)
{
	metric_head(b, name, type, help);
	kf_strbuf_addf(b, "%s %.17g\n", name, v);
}

static void histogram(struct kf_strbuf *b, const char *name, const char *help,
		      const long *h, double sum)
{
	static const double bound[] = SRV_HIST_BOUNDS;
	metric_head(b, name, "histogram", help);
	long cum = 0;
	for (int i = 0; i < SRV_HIST_BUCKETS; i++) {
		cum += h[i];
		if (i < SRV_HIST_BUCKETS - 1)
			kf_strbuf_addf(b, "%s_bucket{le=\"%g\"} %ld\n", name,
				       bound[i], cum);
		else
			kf_strbuf_addf(b, "%s_bucket{le=\"+Inf\"} %ld\n", name,
				       cum);
	}
	kf_strbuf_addf(b, "%s_sum %.17g\n%s_count %ld\n", name, sum, name, cum);
}

/* A label's value as the exposition format writes it: backslash, double
 * quote and newline escaped. */
static void label_value(struct kf_strbuf *b, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			kf_strbuf_addf(b, "\\%c", *v);
		else if (*v == '\n')
			kf_strbuf_addstr(b, "\\n");
		else
			kf_strbuf_add(b, v, 1);
	}
}

/* The farm's gauges, from its state in Redis (kf_rfarm_status); only
 * kforge_farm_up 0 when Redis does not answer. Under no lock. */
static void farm_metrics(struct kf_strbuf *b, const char *url)
{
	cJSON *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_rfarm_status(url, &st, &err);
	metric(b, "kforge_farm_up", "gauge",
	       "1 when the farm's Redis answered this scrape, else 0 (and no "
	       "other kforge_farm_ gauge).",
	       rc ? 0 : 1);
	if (rc)
		return;
	const cJSON *qs = cJSON_GetObjectItem(st, "queues"), *q;
	const cJSON *ws = cJSON_GetObjectItem(st, "workers"), *w;
	metric_head(b, "kforge_farm_queue_depth", "gauge",
		    "Jobs queued on the farm, not yet taken by a worker, by "
		    "backend.");
	cJSON_ArrayForEach(q, qs)
	{
		kf_strbuf_addstr(b, "kforge_farm_queue_depth{backend=\"");
		label_value(b, kf_json_str(q, "backend"));
		kf_strbuf_addf(b, "\"} %.0f\n", kf_json_num(q, "waiting", 0));
	}
	metric_head(b, "kforge_farm_pending", "gauge",
		    "Jobs taken by a worker and not yet answered (claimed, "
		    "unacknowledged), by backend.");
	cJSON_ArrayForEach(q, qs)
	{
		kf_strbuf_addstr(b, "kforge_farm_pending{backend=\"");
		label_value(b, kf_json_str(q, "backend"));
		kf_strbuf_addf(b, "\"} %.0f\n",
			       kf_json_num(q, "in_flight", 0));
	}
	metric_head(b, "kforge_farm_workers", "gauge",
		    "Farm workers whose heartbeat is live, by backend.");
	cJSON_ArrayForEach(q, qs)
	{
		const char *be = kf_json_str(q, "backend");
		int nw = 0;
		cJSON_ArrayForEach(w, ws)
		{
			const char *wb = kf_json_str(w, "backend");
			nw += be && wb && !strcmp(be, wb);
		}
		kf_strbuf_addstr(b, "kforge_farm_workers{backend=\"");
		label_value(b, be);
		kf_strbuf_addf(b, "\"} %d\n", nw);
	}
	static const char *const per[][3] = {
	    {"kforge_farm_worker_slots", "slots",
	     "Evaluations a farm worker runs at once."},
	    {"kforge_farm_worker_gpus", "gpus",
	     "GPUs a farm worker evaluates on (0 on a host node)."},
	    {"kforge_farm_worker_heartbeat_age_seconds", "seen_s_ago",
	     "Seconds since a farm worker's last heartbeat."},
	    {"kforge_farm_worker_done", "done",
	     "Jobs a farm worker has answered since it started."},
	};
	for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); k++) {
		if (!cJSON_GetArraySize(ws))
			break;
		metric_head(b, per[k][0], "gauge", per[k][2]);
		cJSON_ArrayForEach(w, ws)
		{
			kf_strbuf_addf(b, "%s{worker=\"", per[k][0]);
			label_value(b, kf_json_str(w, "name"));
			kf_strbuf_addstr(b, "\",host=\"");
			label_value(b, kf_json_str(w, "host"));
			kf_strbuf_addstr(b, "\",backend=\"");
			label_value(b, kf_json_str(w, "backend"));
			kf_strbuf_addf(b, "\"} %.6g\n",
				       kf_json_num(w, per[k][1], 0));
		}
	}
	const cJSON *t = cJSON_GetObjectItem(st, "totals");
	metric(b, "kforge_farm_answered_total", "counter",
	       "Jobs the farm's workers answered (all submitters).",
	       kf_json_num(t, "done", 0));
	metric(b, "kforge_farm_retried_total", "counter",
	       "Jobs answered after a take-over: their worker was lost "
	       "(killed, cut off) and another evaluated them again.",
	       kf_json_num(t, "reclaimed", 0));
	metric(b, "kforge_farm_abandoned_total", "counter",
	       "Jobs answered infra_error after --max-attempts deliveries.",
	       kf_json_num(t, "abandoned", 0));
	cJSON_Delete(st);
}

char *kf_server_metrics(struct kf_server *s)
{
	struct kf_strbuf b = KF_STRBUF_INIT;
	pthread_mutex_lock(&s->lock);
	metric(&b, "kforge_queue_depth", "gauge",
	       "Evaluations queued, not yet started.", s->depth);
	metric(&b, "kforge_queue_capacity", "gauge",
	       "The most evaluations the queue holds (--queue).",
	       s->o.queue_cap);
	metric(&b, "kforge_busy_workers", "gauge",
	       "Workers running an evaluation.", s->running);
	metric(&b, "kforge_workers", "gauge", "Workers (--workers).",
	       s->o.workers);
	metric(&b, "kforge_episodes_open", "gauge", "Multi-turn episodes open.",
	       s->n_episodes);
	metric(&b, "kforge_groups_open", "gauge",
	       "Groups waiting for items sent in other requests.",
	       s->n_groups);
	metric(&b, "kforge_groups_incomplete_total", "counter",
	       "Groups answered at --group-wait without all their items.",
	       (double)s->groups_incomplete);
	metric(&b, "kforge_requests_total", "counter", "HTTP requests handled.",
	       (double)s->requests);
	metric(&b, "kforge_items_total", "counter",
	       "Completions received for scoring.", (double)s->items);
	metric(&b, "kforge_dedup_hits_total", "counter",
	       "Items scored by an evaluation of the same source.",
	       (double)s->dedup_hits);
	metric(&b, "kforge_rejected_busy_total", "counter",
	       "Requests answered 503 because the queue was full.",
	       (double)s->rejected_busy);
	metric(&b, "kforge_deadline_misses_total", "counter",
	       "Evaluations still queued at their request's deadline.",
	       (double)s->deadline_misses);
	metric_head(&b, "kforge_http_errors_total", "counter",
		    "Answers with an error status, by class (503 not "
		    "included: see kforge_rejected_busy_total).");
	kf_strbuf_addf(&b, "kforge_http_errors_total{class=\"4xx\"} %ld\n",
		       s->errors_4xx);
	kf_strbuf_addf(&b, "kforge_http_errors_total{class=\"5xx\"} %ld\n",
		       s->errors_5xx);
	metric_head(&b, "kforge_evaluations_total", "counter",
		    "Evaluations finished, by the verdict's status.");
	for (int i = 0; i <= KF_STATUS_INFRA_ERROR; i++)
		kf_strbuf_addf(
		    &b, "kforge_evaluations_total{status=\"%s\"} %ld\n",
		    kf_status_name((enum kf_status)i), s->status_count[i]);
	histogram(&b, "kforge_evaluation_seconds",
		  "Time of an evaluation in a worker (compile, checks, "
		  "timing; a retry after an infra_error included).",
		  s->eval_hist, s->eval_seconds);
	histogram(&b, "kforge_scoring_request_seconds",
		  "Time of a POST request, received to answered (queueing "
		  "included).",
		  s->req_hist, s->req_seconds);
	metric(&b, "kforge_uptime_seconds", "gauge",
	       "Seconds since the server started.",
	       (double)(kf_now_ns() - s->started_ns) / 1e9);
	if (s->o.redis) {
		metric(&b, "kforge_serve_farm_jobs_total", "counter",
		       "Evaluations this server submitted to the farm.",
		       (double)s->farm_jobs);
		metric(&b, "kforge_serve_farm_retried_total", "counter",
		       "This server's farm jobs answered after a take-over "
		       "(their first worker was lost).",
		       (double)s->farm_retried);
		metric(&b, "kforge_serve_farm_duplicates_total", "counter",
		       "Second answers to this server's farm jobs, dropped.",
		       (double)s->farm_duplicates);
		metric(&b, "kforge_serve_farm_reconnects_total", "counter",
		       "Times this server's submissions reconnected to Redis.",
		       (double)s->farm_reconnects);
	}
	pthread_mutex_unlock(&s->lock);
	if (s->o.redis)
		farm_metrics(&b, s->o.redis);
	return kf_strbuf_detach(&b);
}
