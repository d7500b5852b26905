/*
 * report_int.h: what the files of src/report share: the model's sections,
 * tables and Chart.js configurations, the per-candidate charts, the
 * environment manifest and CSV cells.
 */
#ifndef KFORGE_REPORT_INT_H
#define KFORGE_REPORT_INT_H

#include <stdbool.h>

#include <kforge/report.h>

/* What the page says where a record lacks a figure. */
#define RP_NOT_RECORDED "not recorded"

/* A new model {kind, title, sections: []}. */
cJSON *rp_model(const char *kind, const char *title);
/* A new section {id, title, text, tables, charts} of model. */
cJSON *rp_section(cJSON *model, const char *id, const char *title);
/* A paragraph of a section. */
void rp_text(cJSON *sec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A table of the section with these columns (NULL-terminated); returns
 * its rows, to which rp_row adds. */
cJSON *rp_table(cJSON *sec, const char *const *columns);
/* A row of n cells (strings; NULL is an empty cell). */
void rp_row(cJSON *rows, int n, ...);
/* A key and value row of a two-column table; NULL or "" value reads
 * RP_NOT_RECORDED. */
void rp_kv(cJSON *rows, const char *key, const char *value);

/* A chart of the section: {id, title, note, config: {type, data:
 * {datasets: []}, options: {scales: {}, plugins: {}}}}; returns its
 * config. */
cJSON *rp_chart(cJSON *sec, const char *id, const char *title,
		const char *type);
/* Sets the chart's note (below it). */
void rp_chart_note(cJSON *cfg, cJSON *sec, const char *note);
/* An axis of config: its title and scale type ("linear", "logarithmic",
 * "category"; NULL leaves Chart.js's default). */
cJSON *rp_axis(cJSON *cfg, const char *axis, const char *title,
	       const char *type);
/* A dataset of config (type NULL: the chart's); returns it, its "data"
 * array empty. */
cJSON *rp_dataset(cJSON *cfg, const char *label, const char *type);
/* The data array of a dataset. */
cJSON *rp_data(cJSON *ds);
/* Appends {x, y} to a dataset's data. */
void rp_point(cJSON *ds, double x, double y);
/* Appends a number (NaN: null) to a dataset's data. */
void rp_value(cJSON *ds, double v);
/* Appends [lo, hi] (a floating bar), or null when either is NaN. */
void rp_range(cJSON *ds, double lo, double hi);

/* Removes the datasets with no value other than null, then the charts
 * left with no dataset (saying so in the section's text). */
void rp_prune(cJSON *model);

/* The timing and roofline charts of one evaluated candidate (result
 * holds timing and roofline), with id prefix; says in the section what
 * the result does not hold. */
void rp_candidate_charts(cJSON *sec, const char *prefix, const cJSON *timing,
			 const cJSON *roofline);

/* The environment manifest of result (may be NULL) as rows of a
 * two-column table in sec. */
void rp_environment(cJSON *sec, const cJSON *result, cJSON **rows_out);

/* A number as text ("%.4g"), or NULL when not finite; static storage for
 * the last few calls. */
const char *rp_num(double v);

/* CSV: a cell (quoted where it holds a comma, quote or newline), a
 * number (empty when not finite), the end of a row. */
void rp_csv_str(struct kf_strbuf *sb, const char *s, bool first);
void rp_csv_num(struct kf_strbuf *sb, double v, bool first);
void rp_csv_end(struct kf_strbuf *sb);

#endif
