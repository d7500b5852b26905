/*
 * profile_test.c: kforge profile (src/profile, docs/profile.md): the ncu
 * CSV parser on a hand-made fixture, every analyser on its trigger values
 * and on clean ones (hits and false alarms), the bottleneck classes, the
 * resource parser on recorded cuobjdump output and on kernels compiled
 * here, and the command's messages and errors without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/compile.h>
#include <kforge/profile.h>
#include <kforge/prompt.h>
#include <kforge/server.h>

#include "harness.h"
#include "serve_proc.h"

static char *fixture(const char *name)
{
	char *p = kf_xasprintf("tests/data/profile/%s", name);
	char *t = kf_test_read_text(p);
	free(p);
	return t;
}

static const struct kf_prof_kernel *kernel(const struct kf_prof_side *s,
					   const char *prefix)
{
	for (int i = 0; i < s->n; i++)
		if (!strncmp(s->k[i].name, prefix, strlen(prefix)))
			return &s->k[i];
	return NULL;
}

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fmax(1.0, fabs(b));
}

static void test_profile_parse_ncu_fixture(void)
{
	char *text = fixture("ncu_raw.csv");
	struct kf_profile p;
	kf_profile_init(&p);
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(!kf_profile_parse_ncu(text, 2, &p.side[1], &err), "%s",
		  err.msg);
	/* kf_fill (the engine's) is left out; two launches merge */
	CHECK(p.side[1].n == 2);
	CHECK(!kernel(&p.side[1], "kf_fill"));
	const struct kf_prof_kernel *k = kernel(&p.side[1], "scale_strided");
	CHECK(k && k->launches == 2);
	CHECK(close_to(k->time_ns, 2.2e6)); /* summed, separators dropped */
	CHECK(close_to(k->dram_pct, 30.5)); /* means over launches */
	CHECK(close_to(k->ld_sectors / k->ld_requests, 32.0));
	CHECK(close_to(k->ld_efficiency_pct, 12.5));
	CHECK(close_to(k->waves, 62.06));
	CHECK(close_to(k->threads_per_inst, 32));
	CHECK(close_to(k->local_sectors, 0));
	/* both spellings of a stall metric are read */
	CHECK(k->n_stalls == 3);
	bool ls = false, lg = false;
	for (int i = 0; i < k->n_stalls; i++) {
		if (!strcmp(k->stalls[i].name, "long_scoreboard"))
			ls = close_to(k->stalls[i].cycles, 50.0);
		if (!strcmp(k->stalls[i].name, "lg_throttle"))
			lg = close_to(k->stalls[i].cycles, 6.0);
	}
	CHECK(ls && lg);
	const struct kf_prof_kernel *t = kernel(&p.side[1], "void tail_kernel");
	CHECK(t && t->launches == 1);
	CHECK(isnan(t->tensor_pct)); /* "n/a" */
	CHECK(close_to(t->waves, 1.10));
	CHECK(close_to(t->shared_bytes, 1024));
	/* the analysers on it: the strided kernel's loads */
	p.bytes = 8.0 * 16777216;
	kf_profile_finish(&p);
	CHECK(p.n_f >= 1);
	CHECK_STR(p.f[0].analyser, "uncoalesced");
	CHECK_CONTAINS(p.f[0].detect, "32.0 sectors");
	char *s = kf_profile_text(&p, true);
	CHECK_CONTAINS(s, "[uncoalesced] In scale_strided");
	CHECK_CONTAINS(s, "long_scoreboard 50.0");
	free(s);
	kf_profile_release(&p);
	free(text);
}

static void test_profile_parse_ncu_units_and_errors(void)
{
	/* a time in microseconds and bytes in megabytes are scaled */
	const char *csv =
	    "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
	    "\"dram__bytes.sum\"\n"
	    "\"\",\"\",\"usecond\",\"Mbyte\"\n"
	    "\"0\",\"k(int)\",\"1.5\",\"2\"\n";
	struct kf_prof_side s;
	memset(&s, 0, sizeof(s));
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_profile_parse_ncu(csv, 1, &s, &err));
	CHECK(s.n == 1 && close_to(s.k[0].time_ns, 1500));
	CHECK(close_to(s.k[0].dram_bytes, 2e6));
	CHECK(isnan(s.k[0].sm_pct)); /* not collected */
	free(s.k[0].name);
	memset(&s, 0, sizeof(s));
	CHECK(kf_profile_parse_ncu("==PROF== nothing\n", 1, &s, &err) ==
	      KF_EPROTO);
	CHECK_CONTAINS(err.msg, "no CSV header");
	CHECK(kf_profile_parse_ncu("\"ID\",\"Kernel Name\",\"x\"\n"
				   "\"0\",\"k\"\n",
				   1, &s, &err) == KF_EPROTO);
	CHECK_CONTAINS(err.msg, "fields");
	for (int i = 0; i < s.n; i++)
		free(s.k[i].name);
}

/* A profile whose candidate has one clean kernel: every metric known and
 * fine, one launch per call. */
static void clean_profile(struct kf_profile *p)
{
	kf_profile_init(p);
	p->bytes = 8e6;
	p->flops = 1e6;
	for (int s = 0; s < 2; s++) {
		struct kf_prof_side *sd = &p->side[s];
		sd->calls = 1;
		sd->n = 1;
		sd->wall_ms = 0.011;
		struct kf_prof_kernel *k = &sd->k[0];
		memset(k, 0, sizeof(*k));
		k->name = kf_xstrdup("scale(const float *, float *, long long)");
		k->launches = 1;
		k->time_ns = 10000;
		k->dram_pct = 85;
		k->dram_bytes = 8e6;
		k->sm_pct = 30;
		k->tensor_pct = NAN;
		k->achieved_occ_pct = 80;
		k->theoretical_occ_pct = 100;
		k->limit_regs = 8;
		k->limit_shared = 32;
		k->limit_blocks = 32;
		k->limit_warps = 8;
		k->regs_per_thread = 16;
		k->block_size = 256;
		k->grid_size = 65536;
		k->waves = 62.06;
		k->shared_bytes = 0;
		k->l1_hit_pct = 0;
		k->l2_hit_pct = 50;
		k->ld_sectors = 4e6;
		k->ld_requests = 1e6;
		k->st_sectors = 4e6;
		k->st_requests = 1e6;
		k->ld_efficiency_pct = 100;
		k->st_efficiency_pct = 100;
		k->local_sectors = 0;
		k->shared_conflicts = 0;
		k->shared_wavefronts = 0;
		k->shared_requests = 0;
		k->threads_per_inst = 31.9;
		k->half_inst = 0;
		k->static_regs = 10;
		k->stack_bytes = 0;
		k->static_shared = 0;
	}
}

/* The analysers that fired, "a,b" in table order. */
static char *fired(struct kf_profile *p)
{
	kf_profile_finish(p);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, "");
	for (int a = 0; a < kf_prof_n_analysers; a++)
		for (int i = 0; i < p->n_f; i++)
			if (!strcmp(p->f[i].analyser, kf_prof_analysers[a].name)) {
				kf_strbuf_addf(&sb, "%s%s", sb.len ? "," : "",
					       p->f[i].analyser);
				break;
			}
	return kf_strbuf_detach(&sb);
}

enum case_id {
	C_CLEAN,
	C_SPILL_STATIC,
	C_SPILL_TRAFFIC,
	C_OCC_REGS,
	C_OCC_SHARED,
	C_OCC_LOW_BUT_BUSY,
	C_UNCOAL_EFF,
	C_UNCOAL_SECTORS,
	C_FLOAT4,
	C_BANKS,
	C_BANKS_MILD,
	C_DIVERGE,
	C_DIVERGE_TAIL_LANES,
	C_TAIL,
	C_TAIL_FEW_BLOCKS,
	C_WHOLE_WAVES,
	C_LAUNCHES,
	C_TWO_LAUNCHES,
	C_TWO_PASS,
	C_TENSOR,
	C_TENSOR_USED,
	C_HALF_ELEMENTWISE,
	N_CASES
};

static const struct {
	const char *name;
	const char *want; /* analysers expected, in table order */
	const char *text; /* a phrase the finding must hold */
} cases[N_CASES] = {
    [C_CLEAN] = {"clean", "", NULL},
    [C_SPILL_STATIC] = {"stack frame", "spills", "1296 bytes"},
    [C_SPILL_TRAFFIC] = {"local traffic", "spills", "local-memory sectors"},
    [C_OCC_REGS] = {"registers limit", "occupancy", "limit is registers"},
    [C_OCC_SHARED] = {"shared limit", "occupancy", "limit is shared memory"},
    [C_OCC_LOW_BUT_BUSY] = {"low occupancy, DRAM saturated", "", NULL},
    [C_UNCOAL_EFF] = {"efficiency 12.5%", "uncoalesced", "12% of each"},
    [C_UNCOAL_SECTORS] = {"32 sectors/request", "uncoalesced",
			  "32.0 sectors"},
    [C_FLOAT4] = {"float4 loads, 16 sectors/request", "", NULL},
    [C_BANKS] = {"32-way conflicts", "bank_conflicts", "32.0-way"},
    [C_BANKS_MILD] = {"1.5-way conflicts", "", NULL},
    [C_DIVERGE] = {"16 active threads", "divergence", "16.0 of a warp"},
    [C_DIVERGE_TAIL_LANES] = {"30 active threads", "", NULL},
    [C_TAIL] = {"1.1 waves", "tail", "1.10 waves"},
    [C_TAIL_FEW_BLOCKS] = {"0.3 waves", "tail", "fills only 30%"},
    [C_WHOLE_WAVES] = {"2.0 waves", "", NULL},
    [C_LAUNCHES] = {"256 tiny launches", "launch_overhead",
		    "launches 256 kernels"},
    [C_TWO_LAUNCHES] = {"two long launches", "", NULL},
    [C_TWO_PASS] = {"2.5x the bytes", "intensity", "2.5x the"},
    [C_TENSOR] = {"bf16 matmul on CUDA cores", "tensor_cores",
		  "tensor cores are idle"},
    [C_TENSOR_USED] = {"bf16 matmul on tensor cores", "", NULL},
    [C_HALF_ELEMENTWISE] = {"half elementwise", "", NULL},
};

static void make_case(struct kf_profile *p, enum case_id c)
{
	clean_profile(p);
	struct kf_prof_side *s = &p->side[1];
	struct kf_prof_kernel *k = &s->k[0];
	switch (c) {
	case C_CLEAN:
	case N_CASES:
		break;
	case C_SPILL_STATIC:
		k->stack_bytes = 1296;
		k->static_regs = 32;
		break;
	case C_SPILL_TRAFFIC:
		k->local_sectors = 2e6;
		break;
	case C_OCC_REGS:
		k->theoretical_occ_pct = 25;
		k->achieved_occ_pct = 24;
		k->limit_regs = 2;
		k->dram_pct = 40;
		break;
	case C_OCC_SHARED:
		k->theoretical_occ_pct = 15.6;
		k->achieved_occ_pct = 15;
		k->limit_shared = 5;
		k->block_size = 64;
		k->limit_warps = 32;
		k->dram_pct = 35;
		break;
	case C_OCC_LOW_BUT_BUSY:
		k->theoretical_occ_pct = 25;
		k->limit_regs = 2;
		k->dram_pct = 90;
		break;
	case C_UNCOAL_EFF:
		k->ld_sectors = 32e6;
		k->ld_efficiency_pct = 12.5;
		break;
	case C_UNCOAL_SECTORS:
		k->ld_sectors = 32e6;
		k->ld_efficiency_pct = NAN;
		k->st_efficiency_pct = NAN;
		break;
	case C_FLOAT4:
		k->ld_sectors = 16e6;
		k->st_sectors = 16e6;
		k->ld_efficiency_pct = NAN;
		k->st_efficiency_pct = NAN;
		break;
	case C_BANKS:
		k->shared_requests = 1000;
		k->shared_conflicts = 31000;
		k->shared_wavefronts = 32000;
		break;
	case C_BANKS_MILD:
		k->shared_requests = 1000;
		k->shared_conflicts = 500;
		k->shared_wavefronts = 1500;
		break;
	case C_DIVERGE:
		k->threads_per_inst = 16;
		break;
	case C_DIVERGE_TAIL_LANES:
		k->threads_per_inst = 30;
		break;
	case C_TAIL:
		k->waves = 1.1;
		k->grid_size = 290;
		break;
	case C_TAIL_FEW_BLOCKS:
		k->waves = 0.3;
		k->grid_size = 80;
		break;
	case C_WHOLE_WAVES:
		k->waves = 2.0;
		break;
	case C_LAUNCHES:
		k->launches = 256;
		k->time_ns = 256 * 2000.0;
		k->dram_bytes = 8e6 / 256;
		s->wall_ms = 1.6;
		break;
	case C_TWO_LAUNCHES:
		k->launches = 2;
		k->time_ns = 2 * 5e6;
		k->dram_bytes = 4e6;
		s->wall_ms = 10.2;
		break;
	case C_TWO_PASS:
		k->dram_bytes = 20e6;
		break;
	case C_TENSOR:
	case C_TENSOR_USED:
		p->half_inputs = true;
		p->flops = 2.0 * 4096 * 4096 * 4096;
		p->bytes = 2.0 * 3 * 4096 * 4096;
		k->dram_bytes = p->bytes;
		k->tensor_pct = c == C_TENSOR ? 0 : 62;
		k->sm_pct = 75;
		k->dram_pct = 10;
		break;
	case C_HALF_ELEMENTWISE:
		p->half_inputs = true;
		k->tensor_pct = 0;
		break;
	}
}

static void test_profile_analysers_hits_and_false_alarms(void)
{
	int bad = 0;
	for (int c = 0; c < N_CASES; c++) {
		struct kf_profile p;
		make_case(&p, (enum case_id)c);
		char *got = fired(&p);
		bool ok = !strcmp(got, cases[c].want);
		if (ok && cases[c].text) {
			char *t = kf_profile_text(&p, false);
			ok = strstr(t, cases[c].text) != NULL;
			if (!ok)
				printf("    %s: no \"%s\" in:\n%s", cases[c].name,
				       cases[c].text, t);
			free(t);
		} else if (!ok) {
			printf("    %s: fired \"%s\", expected \"%s\"\n",
			       cases[c].name, got, cases[c].want);
		}
		/* every finding has its three parts */
		for (int i = 0; i < p.n_f; i++)
			ok = ok && *p.f[i].detect && *p.f[i].explain &&
			     *p.f[i].recommend;
		bad += !ok;
		free(got);
		kf_profile_release(&p);
	}
	CHECK_MSG(bad == 0, "%d of %d cases wrong", bad, N_CASES);
}

static void test_profile_classes_roofline_wins(void)
{
	struct kf_profile p;
	make_case(&p, C_CLEAN);
	kf_profile_finish(&p);
	CHECK(p.side[1].cls == KF_PROF_MEMORY);
	kf_profile_release(&p);
	/* counters say memory, the roofline compute: the roofline wins */
	make_case(&p, C_CLEAN);
	snprintf(p.roof_bound, sizeof(p.roof_bound), "compute");
	kf_profile_finish(&p);
	CHECK(p.side[1].cls == KF_PROF_COMPUTE);
	CHECK(p.side[1].k[0].cls == KF_PROF_MEMORY); /* the kernel's own */
	kf_profile_release(&p);
	/* no unit busy: latency, which the roofline does not contradict */
	make_case(&p, C_CLEAN);
	p.side[1].k[0].dram_pct = 20;
	p.side[1].k[0].sm_pct = 15;
	snprintf(p.roof_bound, sizeof(p.roof_bound), "memory");
	kf_profile_finish(&p);
	CHECK(p.side[1].cls == KF_PROF_LATENCY);
	kf_profile_release(&p);
	make_case(&p, C_TENSOR);
	kf_profile_finish(&p);
	CHECK(p.side[1].cls == KF_PROF_COMPUTE);
	kf_profile_release(&p);
	make_case(&p, C_LAUNCHES);
	kf_profile_finish(&p);
	CHECK(p.side[1].cls == KF_PROF_LAUNCH);
	CHECK(p.side[0].cls == KF_PROF_MEMORY); /* the reference's own */
	cJSON *j = kf_profile_json(&p);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "sides"),
						  "candidate"),
			      "class"),
		  "launch-bound");
	CHECK_CONTAINS(kf_json_str(j, "text"), "[launch_overhead]");
	cJSON_Delete(j);
	kf_profile_release(&p);
}

static void test_profile_resources_recorded(void)
{
	char *text = fixture("cuobjdump_resources.txt");
	struct kf_prof_resources *r = NULL;
	int n = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_profile_parse_resources(text, &r, &n, &err));
	CHECK(n == 2);
	CHECK_STR(r[0].name, "_Z12clean_kernelPKfPfi");
	CHECK(r[0].regs == 10 && r[0].stack == 0 && r[0].shared == 2048);
	CHECK_STR(r[1].name, "_Z12spill_kernelPKfPfii");
	CHECK(r[1].regs == 32 && r[1].stack == 1296);
	/* matched to ncu's demangled names */
	struct kf_prof_side s;
	memset(&s, 0, sizeof(s));
	s.n = 2;
	s.k[0].name = "spill_kernel(const float *, float *, int, int)";
	s.k[1].name = "kernel(int)"; /* not a suffix match of clean_kernel */
	s.k[0].static_regs = s.k[1].static_regs = -1;
	kf_profile_attach_resources(&s, r, n);
	CHECK(s.k[0].static_regs == 32 && s.k[0].stack_bytes == 1296);
	CHECK(s.k[1].static_regs == -1);
	free(r);
	CHECK(kf_profile_parse_resources("Fatbin ptx code:\n", &r, &n, &err) ==
	      KF_EPROTO);
	free(text);
}

/* The trigger kernels compiled here (nvcc), read back with cuobjdump. */
static void test_profile_resources_compiled(void)
{
	char *nvcc = kf_compile_toolchain("cuda");
	if (!nvcc)
		SKIP("no nvcc");
	free(nvcc);
	char *tool = kf_profile_find_tool("cuobjdump");
	if (!tool)
		SKIP("no cuobjdump (set KFORGE_CUOBJDUMP)");
	free(tool);
	const char *files[] = {"spills", "clean", "occupancy_shared"};
	int stack[3], shared[3];
	for (int i = 0; i < 3; i++) {
		char *src = kf_xasprintf(
		    "tests/data/profile/scale/candidates/%s.cu", files[i]);
		struct kf_compile_opts co = {0};
		co.backend = "cuda";
		co.arch = "sm_90";
		struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
		struct kf_err err = KF_ERR_INIT;
		CHECK_MSG(!kf_compile(src, &co, &r, &err) && r.ok, "%s: %s",
			  src, r.log ? r.log : err.msg);
		struct kf_prof_resources *res = NULL;
		int n = 0;
		CHECK_MSG(!kf_profile_resources(r.so_path, &res, &n, &err),
			  "%s", err.msg);
		CHECK(n == 1);
		stack[i] = res[0].stack;
		shared[i] = res[0].shared;
		CHECK(res[0].regs > 0 && res[0].regs <= 32);
		free(res);
		kf_compile_result_release(&r);
		free(src);
	}
	CHECK(stack[0] > 0);	     /* the spilling kernel has a frame */
	CHECK(stack[1] == 0);	     /* the clean one none */
	CHECK(shared[2] >= 40960);   /* 40 KiB a block */
	CHECK(shared[0] == 0 && shared[1] == 0);
}

static void test_profile_cli_host_and_errors(void)
{
	int ec;
	const char *host[] = {"profile", "tests/data/profile/scale",
			      "tasks/activation/gelu/candidates/naive.c", NULL};
	char *out = kf_test_kforge(host, 60000, 1 << 16, &ec);
	CHECK(ec == 0);
	CHECK_CONTAINS(out, "host backend");
	CHECK_CONTAINS(out, "counters");
	free(out);
	const char *json[] = {"profile", "tests/data/profile/scale",
			      "tasks/activation/gelu/candidates/naive.c",
			      "--json", NULL};
	out = kf_test_kforge(json, 60000, 1 << 16, &ec);
	CHECK(ec == 0);
	cJSON *j = cJSON_Parse(out);
	CHECK(j && kf_json_str(j, "note"));
	cJSON_Delete(j);
	free(out);
	if (access("/dev/nvidiactl", F_OK) != 0) {
		const char *cu[] = {
		    "profile", "tests/data/profile/scale",
		    "tests/data/profile/scale/candidates/clean.cu", NULL};
		out = kf_test_kforge(cu, 60000, 1 << 16, &ec);
		CHECK(ec == 1);
		CHECK_CONTAINS(out, "no NVIDIA GPU");
		free(out);
	}
	static const struct {
		const char *args[6];
		const char *says;
	} bad[] = {
	    {{"profile", "tests/data/profile/scale", NULL}, "expected TASK"},
	    {{"profile", "tests/data/profile/scale", "x.py", NULL},
	     "must be a .cu"},
	    {{"profile", "tests/data/profile/scale",
	      "tasks/activation/gelu/candidates/naive.c", "--backend", "gpu",
	      NULL},
	     "--backend must be cuda or host"},
	    {{"profile", "tests/data/profile/scale",
	      "tasks/activation/gelu/candidates/naive.c", "--backend", "cuda",
	      NULL},
	     "takes a .cu"},
	    {{"profile", "tests/data/profile/scale", "nowhere.cu", NULL},
	     "no candidate file"},
	    {{"profile", "tests/data/profile/nope",
	      "tasks/activation/gelu/candidates/naive.c", NULL},
	     "tests/data/profile/nope"},
	    {{"profile", "tests/data/profile/scale",
	      "tasks/activation/gelu/candidates/naive.c", "--calls", "0",
	      NULL},
	     "--calls must be"},
	    {{"profile", "tests/data/profile/scale",
	      "tasks/activation/gelu/candidates/naive.c", "--jsn", NULL},
	     "did you mean --json"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = kf_test_kforge(bad[i].args, 60000, 1 << 16, &ec);
		CHECK_MSG(ec == 2, "case %zu: exit %d: %s", i, ec, out);
		CHECK_CONTAINS(out, bad[i].says);
		free(out);
	}
}

/* The feedback of a result carrying a profile: the advice, after the
 * timing; a result without one says nothing of profiles. */
static void test_profile_feedback_text(void)
{
	struct kf_profile p;
	make_case(&p, C_TWO_PASS);
	kf_profile_finish(&p);
	cJSON *r = cJSON_Parse("{\"status\": \"ok\", \"timing\": {"
			       "\"candidate\": {\"median\": 1.0},"
			       "\"reference\": {\"median\": 1.2},"
			       "\"speedup\": {\"median\": 1.2}}}");
	char *plain = kf_prompt_feedback(r);
	CHECK(!strstr(plain, "Profile"));
	cJSON_AddItemToObject(r, "profile", kf_profile_json(&p));
	char *fb = kf_prompt_feedback(r);
	CHECK_CONTAINS(fb, "Timing:");
	CHECK_CONTAINS(fb, "[intensity]");
	CHECK_CONTAINS(fb, "What to do:");
	CHECK(strstr(fb, "Timing:") < strstr(fb, "[intensity]"));
	free(plain);
	free(fb);
	cJSON_Delete(r);
	r = cJSON_Parse("{\"status\": \"ok\", \"profile\": {\"error\": "
			"\"profile: no Nsight Compute (ncu) here\"}}");
	fb = kf_prompt_feedback(r);
	CHECK_CONTAINS(fb, "Profile: not available (profile: no Nsight");
	free(fb);
	cJSON_Delete(r);
	kf_profile_release(&p);
}

/* /v1/score's "feedback": "profile" on the host backend: the item's
 * feedback carries the profile's plain message and the item its profile;
 * the standard mode carries none; another value is refused. */
static void test_profile_score_feedback_mode(void)
{
	struct kf_server *s = kf_test_server_lib("p.db");
	char *code = kf_test_read_text("tests/fixtures/scale/candidates/vector_reads.c");
	for (int mode = 0; mode < 3; mode++) {
		cJSON *b = cJSON_CreateObject();
		if (mode == 1)
			cJSON_AddStringToObject(b, "feedback", "profile");
		if (mode == 2)
			cJSON_AddStringToObject(b, "feedback", "counters");
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "id", "a");
		cJSON_AddStringToObject(it, "problem_id", "scale");
		cJSON_AddStringToObject(it, "code", code);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"), it);
		char *body = cJSON_PrintUnformatted(b);
		struct kf_server_response r;
		kf_server_handle(s, "POST", "/v1/score", body, strlen(body), &r);
		cJSON *j = cJSON_Parse(r.body);
		if (mode == 2) {
			CHECK_MSG(r.status == 400, "%s", r.body);
			CHECK_CONTAINS(r.body, "feedback must be");
		} else {
			CHECK_MSG(r.status == 200, "%s", r.body);
			const cJSON *item = cJSON_GetArrayItem(
			    cJSON_GetObjectItem(j, "items"), 0);
			CHECK_MSG(!strcmp(kf_json_str(item, "status"), "ok"), "%s", r.body);
			const char *fb = kf_json_str(item, "feedback");
			if (mode == 0) {
				CHECK(!strstr(fb, "Profile"));
				CHECK(!cJSON_GetObjectItem(item, "profile"));
			} else {
				CHECK_CONTAINS(fb, "Profile: ");
				CHECK_CONTAINS(fb, "cuda backend");
				CHECK(kf_json_str(
				    cJSON_GetObjectItem(item, "profile"),
				    "note"));
			}
		}
		cJSON_Delete(j);
		kf_server_response_release(&r);
		free(body);
		cJSON_Delete(b);
	}
	free(code);
	kf_server_free(s);
}

KF_TESTS(profile) = {
    KF_TEST(test_profile_parse_ncu_fixture),
    KF_TEST(test_profile_parse_ncu_units_and_errors),
    KF_TEST(test_profile_analysers_hits_and_false_alarms),
    KF_TEST(test_profile_classes_roofline_wins),
    KF_TEST(test_profile_resources_recorded),
    KF_TEST(test_profile_resources_compiled),
    KF_TEST(test_profile_cli_host_and_errors),
    KF_TEST(test_profile_feedback_text),
    KF_TEST(test_profile_score_feedback_mode),
    KF_TESTS_END,
};
