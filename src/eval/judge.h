/*
 * judge.h: the verdict type and the judge's rules over what the worker
 * observes during a candidate's calls (judge.c). Every verdict kforge gives
 * is decided in judge.c; the worker and the sessions report what they saw
 * and record what these functions decide.
 */
#ifndef KFORGE_JUDGE_H
#define KFORGE_JUDGE_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/eval.h>

/* What the judge concluded; status OK means "go on". */
struct verdict {
	enum kf_status status;
	char check[32]; /* which check failed: "mismatch", "unwritten"... */
	char reason[1024];
	cJSON *failure; /* owned; details of the failing element, or NULL */
};

/* CPU time the candidate's process may use between two of its calls
 * (returning from one, waiting for the next) before it counts as work
 * after return: beyond it a candidate could compute while it is not
 * timed. */
#define KF_IDLE_CPU_NS 2000000u

/* What loading the candidate's object (the loader, its constructors and
 * static initialisers) may take in its runner: this much CPU time, and
 * this much wall time unless the runner is waiting for a CPU (then up to
 * KF_LOAD_STARVED_FACTOR times as long). Honest objects load in a few
 * milliseconds (docs/results.md); a candidate that spins or sleeps in a
 * constructor would hold its worker for the whole load phase. */
#define KF_LOAD_BUDGET_MS 5000.0
#define KF_LOAD_STARVED_FACTOR 8
/* Whether a candidate's load that has used cpu_ms of CPU time and wall_ms
 * of wall time (runnable: its runner is waiting for or on a CPU) must
 * stop; then v is the verdict. */
bool kf_judge_load_time(double cpu_ms, double wall_ms, bool runnable,
			struct verdict *v);

/* The guard bytes around the candidate's buffers changed (where says
 * which); v unchanged when where is empty. */
void kf_judge_guards(const char *where, struct verdict *v);
/* The global state after a candidate call (now) differs from before it
 * (was); v unchanged when they are equal. */
void kf_judge_global_state(const char *now, const char *was, struct verdict *v);
/* The reference's copy of input name changed during a candidate call. */
void kf_judge_reference_input(const char *name, struct verdict *v);
/* The candidate's process used used_ns of CPU time between its reply and
 * its next request; v set beyond KF_IDLE_CPU_NS in two such gaps in a row
 * (*strikes counts them). */
void kf_judge_idle_cpu(uint64_t used_ns, int *strikes, struct verdict *v);
/* A host call: the candidate's process reported reported_ns for a call in
 * which it used cpu_ns of CPU time, of which at most overhead_ns is the
 * runner's own; v set when the report is far below what one thread did,
 * in this call and the ones before it (*strikes: such calls in a row, the
 * caller's, zero at the start). */
void kf_judge_reply_cpu(double reported_ns, double cpu_ns, double overhead_ns,
			int *strikes, struct verdict *v);
/* Timing kept pairs and dropped more (a side's device throttled): v set
 * when too few were kept to time. */
void kf_judge_throttled(int kept, int dropped, struct verdict *v);
/* The device flush before a timed call left got where it writes want. */
void kf_judge_flush(uint32_t got, uint32_t want, struct verdict *v);
/* The candidate's process answered the engine's channel out of turn (what:
 * how the reply was wrong). */
void kf_judge_out_of_turn(const char *what, struct verdict *v);

#endif
