/*
 * attention.h: the attention family's variant spec and its generator
 * (docs/attention.md). A spec is a small JSON file that names a variant of
 * attention: a score modification, a mask, head grouping, the KV layout,
 * the head dimension and the dtype. kf_attn_spec_load() checks it whole;
 * kf_attn_generate() specialises kforge's one flash-style kernel template
 * for it, as CUDA (tensor cores, mma.sync m16n8k16) or as host C (the same
 * tiles and online softmax, scalar).
 */
#ifndef KFORGE_ATTENTION_H
#define KFORGE_ATTENTION_H

#include <kforge/base.h>

struct kf_attn_spec;

/* Reads and checks the spec at path. Errors are "<path>: <field>: <why>"
 * (KF_EINVAL), or a missing or unreadable file's error. */
int kf_attn_spec_load(const char *path, struct kf_attn_spec **out,
		      struct kf_err *err);
/* The same over a text, errors named after label. */
int kf_attn_spec_parse(const char *text, const char *label,
		       struct kf_attn_spec **out, struct kf_err *err);
void kf_attn_spec_free(struct kf_attn_spec *s);

/* The task id the spec targets ("attention/causal"), or NULL. */
const char *kf_attn_spec_task(const struct kf_attn_spec *s);

/* The candidate's source for backend "cuda" or "host" (malloc'd), or
 * NULL for another backend. */
char *kf_attn_generate(const struct kf_attn_spec *s, const char *backend);

#endif
