/*
 * export.h: training datasets from the run store (`kforge export`): chat
 * examples of the best kernel per task (sft), preference pairs (dpo), scored
 * completions with rewards (rft), a split by task and deduplication by
 * normalised source; and the spans that mark the CUDA- and SIMD-sensitive
 * regions of a kernel's code (docs/export.md gives every rule).
 */
#ifndef KFORGE_EXPORT_H
#define KFORGE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kforge/base.h>
#include <kforge/reward.h>
#include <kforge/store.h>

/* What a span marks. */
enum kf_span_kind {
	KF_SPAN_KERNEL_BODY,	  /* __global__ ... { ... } */
	KF_SPAN_LAUNCH_CONFIG,	  /* <<<...>>>, __launch_bounds__(...),
				     #pragma omp (but its sync directives) */
	KF_SPAN_SHARED_MEMORY,	  /* [extern] __shared__ ... ; */
	KF_SPAN_SYNCHRONIZATION,  /* __syncthreads(), __syncwarp(), .sync(),
				     fences, #pragma omp barrier ... */
	KF_SPAN_INTRINSIC,	  /* __shfl*, __ldg, atomic*, __expf, _mm* */
	KF_SPAN_MEMORY_QUALIFIER, /* __restrict__, restrict, __constant__,
				     const T * inside a kernel */
	KF_SPAN_KINDS
};

/* The kind's name in the datasets: "kernel_body", "launch_config",
 * "shared_memory", "synchronization", "intrinsic", "memory_qualifier". */
const char *kf_span_kind_name(enum kf_span_kind k);

/* One region of a text: bytes [start, end). */
struct kf_span {
	size_t start, end;
	enum kf_span_kind kind;
};

/*
 * The spans of code, sorted by start, a longer span before a shorter one
 * that starts at the same place (a kernel body holds the spans inside it).
 * c_lexing: skip comments and string and character literals, as for C and
 * CUDA sources; false scans the text as it is (a Python ModelNew whose CUDA
 * sits in string literals). *out is an array of *n spans; caller frees.
 */
void kf_spans_find(const char *code, bool c_lexing, struct kf_span **out,
		   size_t *n);

/*
 * The spans of code as a JSON array of {"start", "end", "kind"} whose
 * offsets count Unicode code points (Python's str indices) of the text in
 * which code starts at byte code_at; code_at's own prefix is counted from
 * text. text must be valid UTF-8. Caller frees.
 */
cJSON *kf_spans_json(const char *text, size_t code_at, bool c_lexing);

/* Whether s is valid UTF-8 (what a JSON string must hold). */
bool kf_utf8_valid(const char *s);

enum kf_export_format {
	KF_EXPORT_SFT, /* one chat example per task: its best kernel */
	KF_EXPORT_DPO, /* preference pairs per task */
	KF_EXPORT_RFT, /* every scored completion with its reward */
};

/* "sft", "dpo", "rft"; -1 for another name. */
int kf_export_format_parse(const char *name);

/* Options of kf_export_build; pointers are borrowed. */
struct kf_export_opts {
	enum kf_export_format format;
	const int64_t *runs; /* the runs to read; n_runs 0: every run */
	int n_runs;
	double test_fraction; /* the share of tasks held out; 0: no split */
	uint64_t seed;	      /* of the split */
	const struct kf_reward *reward; /* rft: the design (NULL:
					   log_speedup with its defaults) */
};

/* What an export read, left out and wrote. */
struct kf_export_stats {
	int runs;	/* runs read */
	int evaluated;	/* evaluated candidates read */
	int infra;	/* left out: infra_error (no verdict on the code) */
	int not_utf8;	/* left out: a source that is not valid UTF-8 */
	int duplicates; /* left out: the same normalised source again */
	int tasks[2];	/* tasks in train (or all), in test */
	int records[2]; /* JSONL lines in train (or all), in test */
};

/*
 * Builds the dataset from the store: out[0] is the JSONL text of the train
 * split (everything when there is no split), out[1] that of the test split
 * (NULL without a split); the caller frees both. Each run's task is loaded
 * from the path the run recorded, for its prompt. Errors name the run, the
 * task or the store: KF_ENOENT for a run that does not exist, the task's
 * own errors for one that no longer loads.
 */
int kf_export_build(struct kf_store *st, const struct kf_export_opts *o,
		    char *out[2], struct kf_export_stats *stats,
		    struct kf_err *err);

/*
 * The tasks held out for test: of n task ids (borrowed), the
 * round(fraction * n) whose SHA-256 of "<seed>:<task id>" is smallest, at
 * least 1 and at most n - 1 when n >= 2 and fraction > 0 (none when n < 2).
 * Sets test[i] for each task id ids[i].
 */
void kf_export_split(const char *const *ids, int n, double fraction,
		     uint64_t seed, bool *test);

#endif
