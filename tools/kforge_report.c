/*
 * kforge_report.c: `kforge report`, a search run of the store or the
 * summary of `kforge bench --json` as one self-contained HTML page (the
 * charts of src/report, drawn by the embedded Chart.js) or as CSV.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/report.h>
#include <kforge/store.h>

#include "commands.h"

const char kf_report_usage[] =
    "usage: kforge report RUN|BENCH_RESULTS [-o FILE] [options]\n"
    "\n"
    "Writes a report of a search run (RUN, a run id of the store, from\n"
    "kforge optimize) or of a bench (BENCH_RESULTS, the JSON file that\n"
    "kforge bench --json prints) as one HTML page that opens offline:\n"
    "charts of the speedups, statuses, lineage and parameter landscape\n"
    "of a run, or of fast_p, the speedups per level and the verdicts of\n"
    "a bench; each top candidate's timing and roofline; the environment\n"
    "and the cost. docs/report.md explains each chart.\n"
    "\n"
    "  -o, --output FILE    write FILE (default report.html; CSV goes to\n"
    "                       stdout unless -o is given)\n"
    "  --format html|csv    html (default), or csv: one row per\n"
    "                       evaluation of a run, or per task of a bench\n"
    "  --db FILE, --store FILE\n"
    "                       the store of RUN (default ./kforge.db)\n"
    "  --top N              candidates shown with their timing and\n"
    "                       roofline, the fastest first (default 5)\n"
    "\n"
    "The page embeds Chart.js (Debian's libjs-chart.js, which make copies\n"
    "into build/share/chart.js; `make deps` installs it). Exit status: 0\n"
    "written, 2 bad usage or an error (no such run or file, a file that\n"
    "is not a bench's JSON, Chart.js missing).\n";

#define DEFAULT_DB "kforge.db"
#define BENCH_CAP ((size_t)256 << 20)

enum {
	RO_FORMAT = 300,
	RO_DB,
	RO_STORE,
	RO_TOP,
	RO_HELP,
};

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, RO_FORMAT},
    {"db", required_argument, NULL, RO_DB},
    {"store", required_argument, NULL, RO_STORE},
    {"top", required_argument, NULL, RO_TOP},
    {"help", no_argument, NULL, RO_HELP},
    {NULL, 0, NULL, 0},
};

/* Writes text to path atomically, or to stdout when path is NULL. */
static int write_out(const char *path, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	if (!path) {
		fputs(text, stdout);
		if (fflush(stdout) || ferror(stdout))
			return kf_cli_die("stdout: write failed: %s",
					  strerror(errno));
		return 0;
	}
	if (kf_file_write_atomic(path, text, strlen(text), &err))
		return kf_cli_die("-o: %s", err.msg);
	return 0;
}

static int unknown_option(const char *arg)
{
	const char *near = kf_cli_suggest_option(arg, opts, NULL);
	if (near)
		return kf_cli_die("report: unknown option '%s' or missing "
				  "value; did you mean --%s? (see --help)",
				  arg, near);
	return kf_cli_die("report: unknown option '%s' or missing value "
			  "(see --help)",
			  arg);
}

/* A run id: digits only. */
static bool is_run_id(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* Chart.js and its license notice, read from beside kforge; on a
 * missing file, says which and how to get it. */
static int read_chartjs(char **js, char **license)
{
	struct kf_err err = KF_ERR_INIT;
	char *p = kf_report_chartjs_path();
	char *l = kf_report_chartjs_license_path();
	int rc = 0;
	*js = *license = NULL;
	const char *missing = !kf_file_exists(p)   ? p
			      : !kf_file_exists(l) ? l
						   : NULL;
	if (missing) {
		rc = kf_cli_die("report: %s: missing: the report draws its "
				"charts with Chart.js (Debian's "
				"libjs-chart.js): run `make deps`, then "
				"`make`",
				missing);
	} else if (kf_file_read(p, 16 << 20, js, NULL, &err) ||
		   kf_file_read(l, 1 << 20, license, NULL, &err)) {
		rc = kf_cli_die("report: %s", err.msg);
	} else if (strstr(*js, "</script")) {
		rc = kf_cli_die("report: %s: holds \"</script\": it cannot be "
				"embedded in a page",
				p);
	}
	if (rc) {
		free(*js);
		free(*license);
		*js = *license = NULL;
	}
	free(p);
	free(l);
	return rc;
}

static int html_out(const cJSON *model, const char *output)
{
	char *js = NULL, *license = NULL;
	if (read_chartjs(&js, &license))
		return 2;
	char *page = kf_report_html(model, js, license);
	int rc = write_out(output, page);
	if (!rc && output)
		fprintf(stderr, "kforge: report: wrote %s\n", output);
	free(page);
	free(js);
	free(license);
	return rc;
}

static int report_run(const char *arg, const char *db, bool db_given, bool csv,
		      int top, const char *output)
{
	struct kf_err err = KF_ERR_INIT;
	char *end;
	long long id = strtoll(arg, &end, 10);
	if (*end || id < 1)
		return kf_cli_die("report: '%s' is not a run id (see kforge "
				  "runs)",
				  arg);
	if (!kf_file_exists(db))
		return kf_cli_die("%s: no such store%s", db,
				  db_given ? "" : " (give --db FILE)");
	struct kf_store *st = NULL;
	if (kf_store_open(db, 0, &st, &err))
		return kf_cli_die("%s", err.msg);
	int rc = 0;
	if (csv) {
		char *text = NULL;
		if (kf_report_run_csv(st, id, &text, &err))
			rc = kf_cli_die("report: %s", err.msg);
		else
			rc = write_out(output, text);
		free(text);
	} else {
		cJSON *model = NULL;
		if (kf_report_run_model(st, id, top, &model, &err))
			rc = kf_cli_die("report: %s", err.msg);
		else
			rc = html_out(model, output);
		cJSON_Delete(model);
	}
	kf_store_close(st);
	return rc;
}

static int report_bench(const char *path, bool csv, int top, const char *output)
{
	struct kf_err err = KF_ERR_INIT;
	char *text = NULL;
	size_t len = 0;
	if (!kf_file_exists(path))
		return kf_cli_die("report: %s: no such file (give a run id of "
				  "the store, or the JSON file that kforge "
				  "bench --json prints)",
				  path);
	if (kf_file_read(path, BENCH_CAP, &text, &len, &err))
		return kf_cli_die("report: %s", err.msg);
	const char *end = NULL;
	cJSON *b = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!b) {
		long at = end ? (long)(end - text) : 0;
		free(text);
		return kf_cli_die("report: %s: not valid JSON (at byte %ld); "
				  "expected the summary that kforge bench "
				  "--json prints",
				  path, at);
	}
	free(text);
	int rc = 0;
	if (kf_report_bench_check(b, path, &err)) {
		rc = kf_cli_die("report: %s", err.msg);
	} else if (csv) {
		char *out = kf_report_bench_csv(b);
		rc = write_out(output, out);
		free(out);
	} else {
		cJSON *model = kf_report_bench_model(b, path, top);
		rc = html_out(model, output);
		cJSON_Delete(model);
	}
	cJSON_Delete(b);
	return rc;
}

int kf_report_bench_page(const cJSON *bench, const char *path)
{
	struct kf_err err = KF_ERR_INIT;
	if (kf_report_bench_check(bench, "the bench", &err))
		return kf_cli_die("--report: %s", err.msg);
	cJSON *model = kf_report_bench_model(bench, "this bench's summary", 5);
	int rc = html_out(model, path);
	cJSON_Delete(model);
	return rc;
}

int kf_cmd_report(int argc, char **argv)
{
	const char *output = NULL, *format = "html", *db = NULL, *store = NULL;
	int top = 5, ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			output = optarg;
			break;
		case RO_FORMAT:
			format = optarg;
			break;
		case RO_DB:
			db = optarg;
			break;
		case RO_STORE:
			store = optarg;
			break;
		case RO_TOP: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > 1000)
				return kf_cli_die("report: --top: '%s' is not "
						  "a count from 0 to 1000",
						  optarg);
			top = (int)v;
			break;
		}
		case RO_HELP:
			fputs(kf_report_usage, stdout);
			return 0;
		default:
			return unknown_option(argv[optind - 1]);
		}
	}
	static const char *const formats[] = {"html", "csv"};
	bool csv = !strcmp(format, "csv");
	if (!csv && strcmp(format, "html")) {
		const char *near = kf_cli_suggest(format, formats, 2);
		return kf_cli_die("report: --format: '%s' is not a format "
				  "(html or csv)%s%s%s",
				  format, near ? "; did you mean '" : "",
				  near ? near : "", near ? "'?" : "");
	}
	if (db && store)
		return kf_cli_die("report: --db and --store both name the "
				  "store; give one");
	if (argc - optind != 1)
		return kf_cli_die("report: expected one RUN (a run id, see "
				  "kforge runs) or BENCH_RESULTS (the JSON of "
				  "kforge bench --json); see --help");
	const char *arg = argv[optind];
	if (!output && !csv)
		output = "report.html";
	if (is_run_id(arg)) {
		const char *given = db ? db : store;
		return report_run(arg, given ? given : DEFAULT_DB, given, csv,
				  top, output);
	}
	if (db || store)
		return kf_cli_die("report: --%s applies to a RUN; '%s' is not "
				  "a run id",
				  db ? "db" : "store", arg);
	return report_bench(arg, csv, top, output);
}
