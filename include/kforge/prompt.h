/*
 * prompt.h: what the LLM policy says to a model and reads back: prompts from
 * template files, code from replies, feedback from results (docs/llm.md).
 */
#ifndef KFORGE_PROMPT_H
#define KFORGE_PROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kforge/base.h>
#include <kforge/task.h>

/* Caps on what goes into one prompt. */
#define KF_PROMPT_TEMPLATE_CAP ((size_t)256 << 10) /* one template file */
#define KF_PROMPT_SOURCE_CAP                                                   \
	((size_t)64 << 10)			  /* one example's source,     \
						     truncated beyond */
#define KF_PROMPT_FEEDBACK_CAP ((size_t)16 << 10) /* one feedback text */
#define KF_PROMPT_OUTPUT_CAP ((size_t)2 << 20)	  /* one rendered message */

/* An earlier candidate; every pointer is borrowed. */
struct kf_prompt_example {
	const char *source;   /* the candidate's source text */
	const char *status;   /* its result's status: "ok", "wrong_answer"... */
	double speedup;	      /* median speedup over the reference (above 1:
				 faster); 0 when unknown or not ok */
	const char *feedback; /* kf_prompt_feedback of its result; may be
				 NULL */
};

/* What a prompt is rendered from; every pointer is borrowed. */
struct kf_prompt_input {
	const struct kf_task *task; /* the loaded task (description, tensors,
				       dims, libraries, task->dir) */
	const char *backend;	    /* "host" or "cuda" */
	const char *reference;	    /* the reference's source text */
	const struct kf_prompt_example *examples; /* as picked, in order */
	int n_examples;
	const char *feedback; /* the last result's feedback, for a follow-up
				 turn; NULL on a first turn */
	const char *previous; /* the source that feedback is about; may be
				 NULL */
};

/*
 * Chooses at most k of all[0..n) to show a model, across score buckets as
 * contrastive prompts do: failed (status not "ok"), slower than the
 * reference (speedup < 1), faster, and the best (highest speedup, always
 * taken when any candidate is ok). Buckets are visited in turn (best,
 * faster, slower, failed) until k are chosen; inside a bucket the choice
 * is random from seed. Candidates whose source equals a chosen one are
 * skipped. Writes the indices into picked[0..k), ordered by rising score
 * (failed first, best last), and returns how many; 0 when n or k is 0.
 */
int kf_prompt_pick_examples(const struct kf_prompt_example *all, int n, int k,
			    uint64_t seed, int *picked);

/*
 * Renders the template `name` (letters, digits, '_' and '-'): the files
 * <name>.system (optional) and <name>.user, looked up first in
 * templates_dir when it is not NULL, then in the built-in directory
 * (kf_prompt_builtin_dir). {{placeholder}} names and {{#x}}...{{/x}}
 * sections are documented in docs/llm.md; an unknown placeholder is an
 * error naming the file. On 0, *user is the user message and *system the
 * system message or NULL when there is no .system file; the caller frees
 * both. Errors: KF_ENOENT (no .user file in either place, naming both),
 * KF_EINVAL (a bad name or template), KF_ERANGE (a file or the output over
 * its cap).
 */
int kf_prompt_render(const char *templates_dir, const char *name,
		     const struct kf_prompt_input *in, char **system,
		     char **user, struct kf_err *err);

/*
 * The first turn of task t (backend selected) as kforge's LLM policy and
 * the reward service's episodes show it: the built-in default template
 * (kf_prompt_default_template) over the task's reference, with no earlier
 * candidates and no feedback. On 0, *user is the user message and *system
 * the system message or NULL. reference may be NULL; otherwise *reference
 * gets the reference's text whenever it was read, also on failure, and the
 * caller frees it. Errors as kf_task_reference, kf_file_read (the reference
 * over KF_PROMPT_SOURCE_CAP) and kf_prompt_render.
 */
int kf_prompt_first_turn(const struct kf_task *t, const char *backend,
			 char **system, char **user, char **reference,
			 struct kf_err *err);

/*
 * code as a model's reply would carry it: one fenced block tagged with the
 * task's fence ("c", "cuda" or "python", as the templates' {{fence}}), the
 * code without its trailing newlines. The fence is three backticks, or one
 * more than the longest run of backticks that opens a line of code, so
 * that kf_prompt_extract_as finds the code again. *code_at is the byte
 * offset of the code in the result. Caller frees.
 */
char *kf_prompt_code_block(const struct kf_task *t, const char *backend,
			   const char *code, size_t *code_at);

/*
 * The built-in template directory: $KFORGE_PROMPTS, else prompts/ beside
 * the executable's parent (build/ or build/san/), else ./prompts. Caller
 * frees *out; KF_ENOENT when none holds contrastive.user.
 */
int kf_prompt_builtin_dir(char **out, struct kf_err *err);

/*
 * The code to evaluate from a model reply: among the complete fenced
 * blocks (``` or longer, closed by a fence at least as long) tagged c,
 * cuda, cu, cpp, c++, cxx or untagged, the last one that contains
 * "kf_entry". Text up to the last "</think>" is ignored. Returns the
 * block's text (caller frees), or NULL when there is none or it is over
 * max_bytes.
 */
char *kf_prompt_extract_code(const char *reply, size_t max_bytes);

/* What a task's candidates are: a kf_entry in C or CUDA (kforge's tasks),
 * or a Python ModelNew (KernelBench-format tasks). */
enum kf_code_kind { KF_CODE_KERNEL, KF_CODE_MODELNEW };

/* The candidate's kind for the task at task_path (by kf_task_is_kernelbench).
 */
enum kf_code_kind kf_prompt_code_kind(const char *task_path);

/* kf_prompt_extract_code for either kind: for KF_CODE_MODELNEW the blocks
 * tagged python, py, python3 or untagged, the last that contains
 * "class ModelNew". */
char *kf_prompt_extract_as(const char *reply, size_t max_bytes,
			   enum kf_code_kind kind);

/* The built-in template for task t's first turn: "kernelbench" for a
 * KernelBench-format task, else "contrastive". */
const char *kf_prompt_default_template(const struct kf_task *t);

/* What a completion lacks when no code was found in it, for the kind. */
const char *kf_prompt_no_code_reason(enum kf_code_kind kind);

/* Whether two C sources are the same code: equal once comments and white
 * space are left out (a reply that copies the task's reference, from the
 * prompt that shows it, is no kernel of its own). */
bool kf_prompt_same_code(const char *a, const char *b);

/* The SHA-256 (64 hex digits) of code with its comments and white space
 * left out, as kf_prompt_same_code compares: two sources have the same hash
 * exactly when kf_prompt_same_code holds (up to collisions). */
void kf_prompt_code_hash(const char *code, char hex[65]);

/* Where text goes on after prefix, when text begins with it up to white
 * space (a tokenizer's round trip can add or drop spaces and newlines), or
 * NULL when it does not begin with it. */
const char *kf_prompt_after(const char *text, const char *prefix);

/*
 * Feedback for the next turn from a result JSON (docs/results.md): status,
 * check and reason; the compiler log (capped, its start); the worst
 * mismatch with its trial's dims and per-output counts; timing (medians,
 * speedup and its interval) and the roofline position. At most
 * KF_PROMPT_FEEDBACK_CAP bytes; caller frees; never NULL.
 */
char *kf_prompt_feedback(const cJSON *result);

#endif
