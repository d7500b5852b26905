/*
 * commands.h: the subcommands of the kforge CLI that live in files of their
 * own (tools/kforge_<name>.c). Each has a run function, called with argv[0]
 * the command's name, that returns the process's exit code, and a usage text.
 */
#ifndef KFORGE_TOOLS_COMMANDS_H
#define KFORGE_TOOLS_COMMANDS_H

#include <stddef.h>

/* `kforge serve`: runs kforge-serve (tools/kforge_serve.c). */
int cmd_serve(int argc, char **argv);

/* `kforge bench`: KernelBench-style metrics over many tasks
 * (tools/kforge_bench.c). */
int cmd_bench(int argc, char **argv);
extern const char bench_usage[];

/* `kforge attention check|gen`: the attention variant generator
 * (tools/kforge_attention.c, docs/attention.md). */
int kf_cmd_attention(int argc, char **argv);
extern const char kf_attention_usage[];

/* `kforge compile`: builds sources through the compile cache and reports
 * their times and imports (tools/kforge_compile.c). */
int kf_cmd_compile(int argc, char **argv);
extern const char kf_compile_usage[];

/* `kforge export`: training datasets and runs from the store
 * (tools/kforge_export.c). */
int kf_cmd_export(int argc, char **argv);
extern const char kf_export_usage[];

/* `kforge report`: a run or a bench as an HTML page or CSV
 * (tools/kforge_report.c). */
int kf_cmd_report(int argc, char **argv);
extern const char kf_report_usage[];
/* Writes kforge report's HTML page of a bench's summary (what kforge bench
 * --json prints) to path: 0, or 2 with the reason printed
 * (tools/kforge_report.c). */
struct cJSON;
int kf_report_bench_page(const struct cJSON *bench, const char *path);

/* `kforge eval` with several candidates, --batch, --jobs or --gpus: the
 * farm (tools/kforge_evalmany.c); cmd_eval hands argv over when
 * kf_evalmany_wanted says argv asks for it. */
int kf_cmd_evalmany(int argc, char **argv);
int kf_evalmany_wanted(int argc, char **argv);

/* `kforge profile`: a candidate's kernels and the reference's under
 * Nsight Compute, with the analysers' advice (tools/kforge_profile.c). */
int kf_cmd_profile(int argc, char **argv);
extern const char kf_profile_usage[];

/* `kforge farm worker|status`: the farm on Redis Streams
 * (tools/kforge_farm.c). */
int kf_cmd_farm(int argc, char **argv);
extern const char kf_farm_usage[];
/* Checks a --redis URL (NULL: missing): 0, or the error's code with err
 * saying why, naming --redis (tools/kforge_farm.c). */
struct kf_err;
int kf_farm_redis_url(const char *url, struct kf_err *err);

/* Parses the value of --energy-time (seconds, 0 to KF_ENERGY_MAX_S; 0
 * skips energy) into *out; on a bad value prints why, naming the flag, and
 * returns 2 (tools/kforge_evalmany.c). */
int kf_parse_energy_time(const char *s, double *out);

/* The name among names[0..n) nearest to word (edit distance at most 1 for
 * words under 6 bytes, 2 otherwise; NULL entries skipped), or NULL: the
 * "did you mean" of a mistyped command or option (tools/kforge.c). */
const char *kf_cli_suggest(const char *word, const char *const *names,
			   size_t n);

/* The long option of opts closest to the unknown argument arg ("--name" or
 * "--name=value"), among those allowed names (NULL: all), or NULL
 * (tools/kforge.c). */
struct option;
const char *kf_cli_suggest_option(const char *arg, const struct option *opts,
				  const char *allowed);

/* Prints "kforge: " and the message on stderr; returns 2, the exit code of
 * bad usage (tools/kforge.c). */
int kf_cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
