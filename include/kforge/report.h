/*
 * report.h: `kforge report`, a search run of the store or the results of
 * `kforge bench` as one self-contained HTML file (charts drawn by the
 * embedded Chart.js) or as CSV (docs/report.md).
 *
 * A report is first built as a model, a JSON object that holds everything
 * the page shows: {kind: "run"|"bench", title, sections: [{id, title,
 * text: [..], tables: [{columns, rows}], charts: [{id, title, note,
 * config}]}]}, where each config is a Chart.js configuration. The HTML
 * embeds the model and a script that draws it; the tests read it back.
 */
#ifndef KFORGE_REPORT_H
#define KFORGE_REPORT_H

#include <stdint.h>

#include <kforge/base.h>
#include <kforge/store.h>

/* The model of a run's report: the search, the top candidates (at most
 * top of them, by speedup) and the environment. KF_ENOENT when the store
 * has no such run. Caller frees. */
int kf_report_run_model(struct kf_store *st, int64_t run, int top, cJSON **out,
			struct kf_err *err);

/* One row per evaluation, in the order the evaluations were recorded,
 * with the header line first (docs/report.md). Caller frees. */
int kf_report_run_csv(struct kf_store *st, int64_t run, char **out,
		      struct kf_err *err);

/* Checks that bench is the summary `kforge bench --json` prints (an
 * object with "tasks" and "baselines"); KF_EINVAL naming what is wrong
 * (where names the file in the message). */
int kf_report_bench_check(const cJSON *bench, const char *where,
			  struct kf_err *err);

/* The model of a bench's report; bench passed kf_report_bench_check.
 * Caller frees. */
cJSON *kf_report_bench_model(const cJSON *bench, const char *where, int top);

/* One row per bench item (task), the header line first. Caller frees. */
char *kf_report_bench_csv(const cJSON *bench);

/* Where the Chart.js file and its license are: <dir of kforge>/share/
 * chart.js/chart.min.js and LICENSE (make copies them there). Caller
 * frees. */
char *kf_report_chartjs_path(void);
char *kf_report_chartjs_license_path(void);

/* The page: model, the Chart.js source and its license notice, all
 * inline. Caller frees. */
char *kf_report_html(const cJSON *model, const char *chartjs,
		     const char *license);

#endif
