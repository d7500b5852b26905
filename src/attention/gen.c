/*
 * gen.c: writes a checked spec's candidate. One kernel template of
 * kforge's own (common.tmpl, the geometry and masks both backends share;
 * cuda.tmpl, the tensor-core kernel; host.tmpl, the same algorithm in
 * scalar C), specialised by a prelude of constants and the spec's score
 * modification and mask as functions. The .tmpl files are turned into C
 * strings at build time (Makefile: build/src/attention/<name>.inc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_int.h"

static const char common_tmpl[] =
#include "common.inc"
    ;
static const char cuda_tmpl[] =
#include "cuda.inc"
    ;
static const char host_tmpl[] =
#include "host.inc"
    ;

static const char *mask_text(const struct kf_attn_spec *s, char *buf,
			     size_t cap)
{
	switch (s->mask) {
	case KFA_MASK_NONE:
		return "none";
	case KFA_MASK_CAUSAL:
		return "causal";
	case KFA_MASK_SLIDING:
		snprintf(buf, cap, "sliding window %lld (causal)",
			 (long long)s->mask_arg);
		return buf;
	case KFA_MASK_PREFIX:
		snprintf(buf, cap, "prefix %lld, then causal",
			 (long long)s->mask_arg);
		return buf;
	case KFA_MASK_EXPR:
		snprintf(buf, cap, "%s%s", s->mask_expr.text,
			 s->mask_causal ? " (declared causal, checked)" : "");
		return buf;
	}
	return "?";
}

/* The prelude: what the spec fixes, as constants and two functions. */
static void prelude(const struct kf_attn_spec *s, bool cuda,
		    struct kf_strbuf *sb)
{
	char mbuf[1200];
	const char *layout = s->layout == KFA_CONTIGUOUS ? "contiguous"
			     : s->layout == KFA_VARLEN	 ? "varlen (packed)"
							 : "paged";
	/* the spec's own text is kept out of the comment's terminator */
	char *mod = kf_xstrdup(s->has_mod ? s->mod.text : "score");
	char *mtxt = kf_xstrdup(mask_text(s, mbuf, sizeof(mbuf)));
	for (char *p = mod; *p; p++)
		if (p[0] == '*' && p[1] == '/')
			p[1] = ' ';
	for (char *p = mtxt; *p; p++)
		if (p[0] == '*' && p[1] == '/')
			p[1] = ' ';
	kf_strbuf_addf(sb,
		       "/*\n"
		       " * %s: attention variant '%s'%s%s, written by kforge "
		       "attention gen\n"
		       " * from its spec (docs/attention.md): kforge's "
		       "flash-style template,\n"
		       " * %s.\n"
		       " *   dtype %s, head dim %d, heads %d / kv heads %d "
		       "(group %d), layout %s%s\n"
		       " *   mask: %s\n"
		       " *   score_mod: %s\n"
		       " */\n",
		       cuda ? "generated.cu" : "generated.c", s->name,
		       s->task ? " for task " : "", s->task ? s->task : "",
		       cuda ? "tensor cores through mma.sync m16n8k16 (16-bit "
			      "in, fp32 accumulate),\n * K/V tiles staged in "
			      "shared memory, online softmax, fully masked "
			      "tiles skipped"
			    : "host C: the cuda kernel's tiles, skipped tiles "
			      "and online softmax,\n * scalar, with P rounded "
			      "to 16 bits as the tensor cores take it",
		       s->bf16 ? "bfloat16" : "float16", s->head_dim,
		       s->n_heads, s->n_kv_heads, s->n_heads / s->n_kv_heads,
		       layout, s->layout == KFA_PAGED ? " (decode)" : "",
		       mtxt, mod);
	free(mod);
	free(mtxt);
	if (cuda)
		kf_strbuf_addstr(sb, "/* kforge: sm_90a */\n"
				     "#pragma nv_diag_suppress 177 /* unused "
				     "helpers of other variants */\n"
				     "#include <math.h>\n"
				     "#include <stdint.h>\n"
				     "#include <string.h>\n\n"
				     "#include <cuda_bf16.h>\n"
				     "#include <cuda_fp16.h>\n"
				     "#include <cuda_runtime.h>\n\n"
				     "#include <kforge/kernel.h>\n\n"
				     "#define KFA_FN __device__ static "
				     "__forceinline__\n");
	else
		kf_strbuf_addstr(sb, "#include <math.h>\n"
				     "#include <stdbool.h>\n"
				     "#include <stdint.h>\n"
				     "#include <stdlib.h>\n"
				     "#include <string.h>\n\n"
				     "#include <kforge/kernel.h>\n\n"
				     "#define KFA_FN static inline\n");
	kf_strbuf_addf(sb,
		       "#define KFA_MASK_NONE 0\n"
		       "#define KFA_MASK_CAUSAL 1\n"
		       "#define KFA_MASK_SLIDING 2\n"
		       "#define KFA_MASK_PREFIX 3\n"
		       "#define KFA_MASK_EXPR 4\n"
		       "#define KFA_MASK %d\n"
		       "#define KFA_MASK_ARG %lld\n"
		       "#define KFA_MASK_CAUSAL_DECLARED %d\n"
		       "#define KFA_HAS_MOD %d\n"
		       "#define KFA_BF16 %d\n"
		       "#define KFA_D %d\n"
		       "#define KFA_SCALE %.9gf /* 1 / sqrt(KFA_D) */\n"
		       "#define KFA_G %d /* query heads per kv head */\n"
		       "#define KFA_LAYOUT %d /* 0 contiguous, 1 varlen, 2 "
		       "paged */\n"
		       "#define KFA_BS %d /* paged: rows per cache block */\n"
		       "#define KFA_NIN %d\n"
		       "#define KFA_BM 64 /* rows per block */\n"
		       "#define KFA_BN 64 /* keys per tile */\n\n",
		       (int)s->mask, (long long)s->mask_arg,
		       s->mask_causal ? 1 : 0, s->has_mod ? 1 : 0,
		       s->bf16 ? 1 : 0, s->head_dim,
		       s->head_dim == 64 ? 0.125 : 0.0883883476483184,
		       s->n_heads / s->n_kv_heads, (int)s->layout,
		       s->layout == KFA_PAGED ? s->block_size : 1,
		       s->layout == KFA_CONTIGUOUS ? 3
		       : s->layout == KFA_VARLEN   ? 4
						   : 5);
}

static void functions(const struct kf_attn_spec *s, struct kf_strbuf *sb)
{
	kf_strbuf_addstr(sb,
			 "\n/* ---- the spec's score modification and mask "
			 "---- */\n"
			 "KFA_FN float kfa_mod(float score, int b, int h, int "
			 "q_idx, int kv_idx,\n\t\t      int n_heads)\n{\n"
			 "\t(void)score;\n\t(void)b;\n\t(void)h;\n"
			 "\t(void)q_idx;\n\t(void)kv_idx;\n\t(void)n_heads;\n"
			 "\treturn ");
	if (s->has_mod)
		kfa_expr_emit(&s->mod, sb);
	else
		kf_strbuf_addstr(sb, "score");
	kf_strbuf_addstr(sb,
			 ";\n}\n\n"
			 "KFA_FN bool kfa_keep(int b, int h, int q_idx, int "
			 "kv_idx, int n_heads)\n{\n"
			 "\t(void)b;\n\t(void)h;\n\t(void)q_idx;\n"
			 "\t(void)kv_idx;\n\t(void)n_heads;\n\treturn ");
	if (s->mask == KFA_MASK_EXPR)
		kfa_expr_emit(&s->mask_expr, sb);
	else
		kf_strbuf_addstr(sb, "kfa_named_keep(q_idx, kv_idx)");
	kf_strbuf_addstr(sb, ";\n}\n\n");
}

char *kf_attn_generate(const struct kf_attn_spec *s, const char *backend)
{
	bool cuda;
	if (!strcmp(backend, "cuda"))
		cuda = true;
	else if (!strcmp(backend, "host"))
		cuda = false;
	else
		return NULL;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	prelude(s, cuda, &sb);
	kf_strbuf_addstr(&sb, common_tmpl);
	functions(s, &sb);
	kf_strbuf_addstr(&sb, cuda ? cuda_tmpl : host_tmpl);
	return kf_strbuf_detach(&sb);
}
