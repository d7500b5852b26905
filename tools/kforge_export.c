/*
 * kforge_export.c: `kforge export`, the store's runs as files: the training
 * datasets (sft, dpo, rft; src/export, docs/export.md) or one run's every
 * candidate with its result (jsonl). Nothing is written on an error; files
 * are replaced atomically.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/export.h>
#include <kforge/reward.h>
#include <kforge/store.h>

#include "commands.h"

const char kf_export_usage[] =
    "usage: kforge export --format sft|dpo|rft [RUN ...] [options]\n"
    "       kforge export RUN --format jsonl [--db FILE] [-o FILE]\n"
    "\n"
    "Writes training data from the store's evaluated candidates, as JSONL\n"
    "(docs/export.md): from the runs RUN ..., or from every run of the\n"
    "store when none is named. Each task's prompt is the first turn that\n"
    "kforge's LLM policy shows for it; each completion is a candidate's\n"
    "code in one fenced block. Candidates whose code is the same once\n"
    "comments and white space are left out count once (the first\n"
    "evaluated); infra_error results are left out.\n"
    "\n"
    "  --format sft         per task, its fastest correct candidate as a chat\n"
    "                       example {messages, task, speedup, spans}; spans\n"
    "                       mark the CUDA- and SIMD-sensitive regions\n"
    "  --format dpo         per task, pairs {prompt, chosen, rejected,\n"
    "                       chosen_meta, rejected_meta}: a correct candidate\n"
    "                       over an incorrect one, or over a correct one\n"
    "                       whose speedup interval lies wholly below its own\n"
    "  --format rft         every candidate {prompt, completion, reward,\n"
    "                       status, task}, rewarded within its task's group\n"
    "  --format jsonl       one run's every candidate with its result\n"
    "  --db FILE, --store FILE\n"
    "                       the store (default ./kforge.db)\n"
    "  -o, --output FILE    write FILE (atomically) instead of stdout\n"
    "  --split test=F       hold out the share F (0 to 1) of the tasks:\n"
    "                       writes OUT.train.jsonl and OUT.test.jsonl for\n"
    "                       -o OUT.jsonl; no task is in both\n"
    "  --seed N             the split's seed (default 0)\n"
    "  --reward NAME        rft: the reward design (default log_speedup;\n"
    "                       docs/rewards.md)\n"
    "  --reward-params JSON rft: its parameters, a JSON object\n"
    "\n"
    "A summary goes to stderr. Exit status: 0 written, 2 bad usage or an\n"
    "error (a missing store or run, a task that no longer loads).\n";

#define DEFAULT_DB "kforge.db"


/* Writes text to path atomically, or to stdout when path is NULL. */
static int write_out(const char *path, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	if (!path) {
		fputs(text, stdout);
		if (fflush(stdout) || ferror(stdout))
			return kf_cli_die("stdout: write failed: %s", strerror(errno));
		return 0;
	}
	if (kf_file_write_atomic(path, text, strlen(text), &err))
		return kf_cli_die("-o: %s", err.msg);
	return 0;
}

/* One run's candidates, as `kforge export RUN --format jsonl` writes. */
static int export_jsonl(struct kf_store *st, int64_t run, const char *output)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *r = NULL, *cands = NULL;
	if (kf_store_run_get(st, run, &r, &err) ||
	    kf_store_candidate_list(st, run, true, true, &cands, &err)) {
		cJSON_Delete(r);
		return kf_cli_die("%s", err.msg);
	}
	struct kf_strbuf sb = KF_STRBUF_INIT;
	cJSON *head = cJSON_CreateObject();
	cJSON_AddItemToObject(head, "run", r);
	char *line = kf_json_print(head);
	kf_strbuf_addf(&sb, "%s\n", line);
	free(line);
	cJSON_Delete(head);
	cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		cJSON_AddNumberToObject(c, "run", (double)run);
		line = kf_json_print(c);
		kf_strbuf_addf(&sb, "%s\n", line);
		free(line);
	}
	cJSON_Delete(cands);
	int rc = write_out(output, kf_strbuf_str(&sb));
	kf_strbuf_release(&sb);
	return rc;
}

/* OUT.jsonl -> OUT.<part>.jsonl (OUT -> OUT.<part>.jsonl). */
static char *part_path(const char *out, const char *part)
{
	size_t n = strlen(out);
	if (n > 6 && !strcmp(out + n - 6, ".jsonl"))
		n -= 6;
	return kf_xasprintf("%.*s.%s.jsonl", (int)n, out, part);
}

/* The train and test files, both or neither: test goes to a temporary
 * name until train is in place. */
static int write_split(const char *output, char *const text[2], char *paths[2])
{
	struct kf_err err = KF_ERR_INIT;
	paths[0] = part_path(output, "train");
	paths[1] = part_path(output, "test");
	char *tmp = kf_xasprintf("%s.new.%d", paths[1], (int)getpid());
	int rc = 0;
	if (kf_file_write_atomic(tmp, text[1], strlen(text[1]), &err)) {
		rc = kf_cli_die("-o: %s", err.msg);
	} else if (kf_file_write_atomic(paths[0], text[0], strlen(text[0]),
					&err)) {
		unlink(tmp);
		rc = kf_cli_die("-o: %s", err.msg);
	} else if (rename(tmp, paths[1])) {
		rc = kf_cli_die("-o: %s: cannot write: %s", paths[1], strerror(errno));
		unlink(tmp);
		unlink(paths[0]);
	}
	free(tmp);
	return rc;
}

/* --split test=F */
static int parse_split(const char *s, double *f)
{
	char *end = NULL;
	if (strncmp(s, "test=", 5) || !s[5])
		goto bad;
	*f = strtod(s + 5, &end);
	if (*end || !(*f > 0 && *f < 1))
		goto bad;
	return 0;
bad:
	return kf_cli_die("--split: '%s' is not test=F with F between 0 and 1 "
		   "(e.g. test=0.2)",
		   s);
}

static const char *plural(int n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void summary(const char *fmt, const struct kf_export_stats *s,
		    bool split, char *const paths[2])
{
	fprintf(stderr, "kforge: export %s: ", fmt);
	for (int i = 0; i < (split ? 2 : 1); i++)
		fprintf(stderr, "%s%s%d %s of %d %s to %s", i ? ", " : "",
			split ? (i ? "test " : "train ") : "", s->records[i],
			plural(s->records[i], "record", "records"), s->tasks[i],
			plural(s->tasks[i], "task", "tasks"),
			paths[i] ? paths[i] : "stdout");
	fprintf(stderr,
		" (%d evaluated %s of %d %s; left out: %d %s, %d "
		"infra_error, %d not UTF-8)\n",
		s->evaluated, plural(s->evaluated, "candidate", "candidates"),
		s->runs, plural(s->runs, "run", "runs"), s->duplicates,
		plural(s->duplicates, "duplicate", "duplicates"), s->infra,
		s->not_utf8);
}

enum {
	XO_FORMAT = 300,
	XO_DB,
	XO_STORE,
	XO_SPLIT,
	XO_SEED,
	XO_REWARD,
	XO_REWARD_PARAMS,
	XO_HELP,
};

int kf_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, XO_FORMAT},
	    {"db", required_argument, NULL, XO_DB},
	    {"store", required_argument, NULL, XO_STORE},
	    {"output", required_argument, NULL, 'o'},
	    {"split", required_argument, NULL, XO_SPLIT},
	    {"seed", required_argument, NULL, XO_SEED},
	    {"reward", required_argument, NULL, XO_REWARD},
	    {"reward-params", required_argument, NULL, XO_REWARD_PARAMS},
	    {"help", no_argument, NULL, XO_HELP},
	    {NULL, 0, NULL, 0},
	};
	const char *format = NULL, *db = NULL, *output = NULL;
	const char *reward = NULL, *reward_params = NULL;
	const char *store = NULL, *seed_s = NULL;
	double test = 0;
	uint64_t seed = 0;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (ch) {
		case XO_FORMAT:
			format = optarg;
			break;
		case XO_DB:
			db = optarg;
			break;
		case XO_STORE:
			store = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case XO_SPLIT:
			if (parse_split(optarg, &test))
				return 2;
			break;
		case XO_SEED: {
			char *end;
			seed = strtoull(optarg, &end, 10);
			if (!*optarg || *end || *optarg == '-')
				return kf_cli_die("--seed: '%s' is not a "
					   "non-negative integer",
					   optarg);
			seed_s = optarg;
			break;
		}
		case XO_REWARD:
			reward = optarg;
			break;
		case XO_REWARD_PARAMS:
			reward_params = optarg;
			break;
		case XO_HELP:
			fputs(kf_export_usage, stdout);
			return 0;
		default:
			return kf_cli_die("export: unknown option '%s' or missing "
				   "value (see --help)",
				   argv[optind - 1]);
		}
	}
	if (db && store)
		return kf_cli_die("export: --db and --store both name the store; "
			   "give one");
	const char *given = db ? db : store;
	db = given ? given : DEFAULT_DB;
	bool jsonl = format && !strcmp(format, "jsonl");
	int fmt = kf_export_format_parse(format);
	if (!format)
		return kf_cli_die("export: --format is required (sft, dpo, rft or "
			   "jsonl; see --help)");
	if (!jsonl && fmt < 0)
		return kf_cli_die("export: --format: '%s' is not a format (sft, dpo, "
			   "rft, jsonl)",
			   format);
	if ((reward || reward_params) && fmt != KF_EXPORT_RFT)
		return kf_cli_die("export: --%s applies to --format rft only",
			   reward ? "reward" : "reward-params");
	if (jsonl && (test > 0 || seed_s))
		return kf_cli_die("export: --%s does not apply to --format jsonl",
			   test > 0 ? "split" : "seed");
	if (seed_s && !(test > 0))
		return kf_cli_die("export: --seed is the split's: give --split "
			   "test=F too");
	if (test > 0 && !output)
		return kf_cli_die("export: --split needs -o OUT.jsonl (it writes "
			   "OUT.train.jsonl and OUT.test.jsonl)");
	int n_runs = argc - optind;
	if (jsonl && n_runs != 1)
		return kf_cli_die("export: --format jsonl: expected one RUN (see "
			   "kforge runs)");
	int64_t *runs = kf_xcalloc((size_t)n_runs + 1, sizeof(*runs));
	for (int i = 0; i < n_runs; i++) {
		const char *s = argv[optind + i];
		char *end;
		long long v = strtoll(s, &end, 10);
		if (!*s || *end || v < 1) {
			free(runs);
			return kf_cli_die("export: '%s' is not a run id (see kforge "
				   "runs)",
				   s);
		}
		runs[i] = v;
	}
	struct kf_reward rw = KF_REWARD_INIT;
	struct kf_err err = KF_ERR_INIT;
	if (fmt == KF_EXPORT_RFT) {
		cJSON *params = NULL;
		if (reward_params) {
			params = cJSON_Parse(reward_params);
			if (!cJSON_IsObject(params)) {
				cJSON_Delete(params);
				free(runs);
				return kf_cli_die("--reward-params: not a JSON "
					   "object: %s",
					   reward_params);
			}
		}
		int rc = kf_reward_init(&rw, reward ? reward : "log_speedup",
					params, &err);
		cJSON_Delete(params);
		if (rc) {
			free(runs);
			return kf_cli_die("--reward: %s", err.msg);
		}
	}
	if (!kf_file_exists(db)) {
		free(runs);
		return kf_cli_die("%s: no such store%s", db,
			   given ? "" : " (give --store FILE)");
	}
	struct kf_store *st = NULL;
	int rc = 0;
	if (kf_store_open(db, 0, &st, &err)) {
		rc = kf_cli_die("%s", err.msg);
	} else if (jsonl) {
		rc = export_jsonl(st, runs[0], output);
	} else {
		struct kf_export_opts o = {
		    .format = (enum kf_export_format)fmt,
		    .runs = runs,
		    .n_runs = n_runs,
		    .test_fraction = test,
		    .seed = seed,
		    .reward = fmt == KF_EXPORT_RFT ? &rw : NULL,
		};
		struct kf_export_stats stats;
		char *text[2] = {NULL, NULL};
		char *paths[2] = {NULL, NULL};
		if (kf_export_build(st, &o, text, &stats, &err)) {
			rc = kf_cli_die("export: %s", err.msg);
		} else if (test > 0) {
			rc = write_split(output, text, paths);
		} else {
			rc = write_out(output, text[0]);
			paths[0] = output ? kf_xstrdup(output) : NULL;
		}
		if (!rc)
			summary(format, &stats, test > 0, paths);
		free(text[0]);
		free(text[1]);
		free(paths[0]);
		free(paths[1]);
	}
	kf_store_close(st);
	free(runs);
	return rc;
}
