/*
 * ncu.c: what kforge asks Nsight Compute for, and the parser of its
 * `--csv --page raw` output: a header line of column names ("ID",
 * "Process ID", ..., "Kernel Name", ..., then one column per metric), a
 * line of units, then one line per profiled launch. Values may carry
 * thousands separators ("1,234.5"); "n/a" is a metric the device lacks.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/profile.h>

/* The metrics, one per line of the table below; a kernel's field is
 * filled from the column of the same name. */
struct metric {
	const char *name;
	size_t off;  /* offsetof(struct kf_prof_kernel, ...) */
	int scale;   /* 1: a time (to ns), 2: bytes, 0: as is */
};

#define M(n, f, s) {n, offsetof(struct kf_prof_kernel, f), s}
static const struct metric metrics[] = {
    M("gpu__time_duration.sum", time_ns, 1),
    M("dram__throughput.avg.pct_of_peak_sustained_elapsed", dram_pct, 0),
    M("dram__bytes.sum", dram_bytes, 2),
    M("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm_pct, 0),
    M("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_"
      "active",
      tensor_pct, 0),
    M("sm__warps_active.avg.pct_of_peak_sustained_active", achieved_occ_pct,
      0),
    M("sm__maximum_warps_per_active_cycle_pct", theoretical_occ_pct, 0),
    M("launch__occupancy_limit_registers", limit_regs, 0),
    M("launch__occupancy_limit_shared_mem", limit_shared, 0),
    M("launch__occupancy_limit_blocks", limit_blocks, 0),
    M("launch__occupancy_limit_warps", limit_warps, 0),
    M("launch__registers_per_thread", regs_per_thread, 0),
    M("launch__block_size", block_size, 0),
    M("launch__grid_size", grid_size, 0),
    M("launch__waves_per_multiprocessor", waves, 0),
    M("launch__shared_mem_per_block", shared_bytes, 2),
    M("l1tex__t_sector_hit_rate.pct", l1_hit_pct, 0),
    M("lts__t_sector_hit_rate.pct", l2_hit_pct, 0),
    M("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", ld_sectors, 0),
    M("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", ld_requests, 0),
    M("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", st_sectors, 0),
    M("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", st_requests, 0),
    M("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
      ld_efficiency_pct, 0),
    M("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
      st_efficiency_pct, 0),
    M("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", local_sectors, 0),
    M("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", local_sectors, 0),
    M("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", shared_conflicts,
      0),
    M("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", shared_wavefronts,
      0),
    M("smsp__inst_executed_op_shared_ld.sum", shared_requests, 0),
    M("smsp__inst_executed_op_shared_st.sum", shared_requests, 0),
    M("smsp__thread_inst_executed_per_inst_executed.ratio",
      threads_per_inst, 0),
    M("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", half_inst, 0),
    M("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", half_inst, 0),
    M("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", half_inst, 0),
};
#undef M
#define N_METRICS (sizeof(metrics) / sizeof(metrics[0]))

/* Warp stall reasons asked for, as ncu's warp-state ratios
 * smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio. */
static const char *const stalls[] = {
    "long_scoreboard", "short_scoreboard",   "mio_throttle", "lg_throttle",
    "barrier",	       "math_pipe_throttle", "wait",	     "not_selected",
    "dispatch_stall",  "membar",	     "no_instruction", "branch_resolving",
    "tex_throttle",    "drain",		     "imc_miss",     "sleeping",
};
#define N_STALLS (sizeof(stalls) / sizeof(stalls[0]))

static char *ncu_list;

static void ncu_list_make(void)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (size_t i = 0; i < N_METRICS; i++)
		kf_strbuf_addf(&sb, "%s%s", i ? "," : "", metrics[i].name);
	for (size_t i = 0; i < N_STALLS; i++)
		kf_strbuf_addf(&sb,
			       ",smsp__average_warps_issue_stalled_%s_per_"
			       "issue_active.ratio",
			       stalls[i]);
	ncu_list = kf_strbuf_detach(&sb);
}

/* Made once, safely from any thread. */
const char *kf_profile_ncu_metrics(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, ncu_list_make);
	return ncu_list;
}

/* kforge's own device code (src/backend/cuda_kernels.h) and the roofline
 * probe's kernel (src/backend/cuda.c). */
static const char *const engine[] = {"kf_fill",	 "kf_poison",	"kf_compare",
				     "kf_worst", "kf_checksum", "fma_loop"};

bool kf_profile_engine_kernel(const char *name)
{
	for (size_t i = 0; i < sizeof(engine) / sizeof(engine[0]); i++) {
		size_t k = strlen(engine[i]);
		if (!strncmp(name, engine[i], k) &&
		    (name[k] == '\0' || name[k] == '('))
			return true;
	}
	return false;
}

const char *kf_profile_ncu_filter(void)
{
	return "regex:^(?!(kf_fill|kf_poison|kf_compare|kf_worst|kf_checksum|"
	       "fma_loop)\\b)";
}

/* Splits one CSV line into fields (malloc'd copies); returns the count,
 * -1 on an unterminated quote. */
static int split(const char *line, size_t len, char ***out)
{
	int n = 0, cap = 16;
	char **v = kf_xmalloc(sizeof(*v) * cap);
	size_t i = 0;
	for (;;) {
		struct kf_strbuf f = KF_STRBUF_INIT;
		kf_strbuf_addstr(&f, "");
		if (i < len && line[i] == '"') {
			i++;
			for (;;) {
				if (i >= len) {
					kf_strbuf_release(&f);
					for (int j = 0; j < n; j++)
						free(v[j]);
					free(v);
					return -1;
				}
				if (line[i] == '"') {
					if (i + 1 < len && line[i + 1] == '"') {
						kf_strbuf_add(&f, "\"", 1);
						i += 2;
						continue;
					}
					i++;
					break;
				}
				kf_strbuf_add(&f, line + i, 1);
				i++;
			}
		}
		while (i < len && line[i] != ',')
			kf_strbuf_add(&f, line + i++, 1);
		if (n == cap)
			v = kf_xrealloc(v, sizeof(*v) * (cap *= 2));
		v[n++] = kf_strbuf_detach(&f);
		if (i >= len)
			break;
		i++; /* the comma */
	}
	*out = v;
	return n;
}

static void free_fields(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A value as ncu prints it: thousands separators dropped; NAN when it is
 * not a number ("n/a", empty). */
static double value(const char *s)
{
	char buf[64];
	size_t k = 0;
	for (; *s && k + 1 < sizeof(buf); s++)
		if (*s != ',' && !isspace((unsigned char)*s))
			buf[k++] = *s;
	buf[k] = '\0';
	if (!k)
		return NAN;
	char *end;
	double v = strtod(buf, &end);
	return *end ? NAN : v;
}

/* The factor that turns a value in unit u into ns (kind 1) or bytes
 * (kind 2). */
static double unit_scale(const char *u, int kind)
{
	static const struct {
		const char *u;
		double f;
	} t[] = {{"nsecond", 1},    {"ns", 1},	     {"usecond", 1e3},
		 {"us", 1e3},	    {"msecond", 1e6}, {"ms", 1e6},
		 {"second", 1e9},   {"s", 1e9},	     {"byte", 1},
		 {"Kbyte", 1e3},    {"Mbyte", 1e6},   {"Gbyte", 1e9},
		 {"KB", 1e3},	    {"MB", 1e6},      {"GB", 1e9},
		 {"Kibyte", 1024},  {"Mibyte", 1048576.0},
		 {"Gibyte", 1073741824.0}};
	if (!kind || !u || !*u)
		return 1;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(u, t[i].u))
			return t[i].f;
	return 1;
}

/* The stall reason in a metric's name, or NULL: both ncu spellings,
 * ..._issue_stalled_<r>_per_issue_active.ratio and
 * ..._latency_issue_stalled_<r>.ratio. */
static bool stall_name(const char *col, char out[32])
{
	const char *p = strstr(col, "issue_stalled_");
	if (!p || strncmp(col, "smsp__", 6) || strstr(col, "pcsamp"))
		return false;
	p += strlen("issue_stalled_");
	const char *e = strstr(p, "_per_");
	if (!e)
		e = strchr(p, '.');
	if (!e || e == p || e - p >= 32)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return true;
}

static double *field(struct kf_prof_kernel *k, size_t off)
{
	return (double *)((char *)k + off);
}

static void kernel_init(struct kf_prof_kernel *k, const char *name)
{
	memset(k, 0, sizeof(*k));
	k->name = kf_xstrdup(name);
	for (size_t i = 0; i < N_METRICS; i++)
		*field(k, metrics[i].off) = NAN;
	k->static_regs = -1;
	k->stack_bytes = -1;
	k->static_shared = -1;
}

/* Adds v into a field: a NAN field takes v, a number adds it. */
static void add(double *f, double v)
{
	if (isnan(v))
		return;
	*f = isnan(*f) ? v : *f + v;
}

int kf_profile_parse_ncu(const char *text, int calls, struct kf_prof_side *s,
			 struct kf_err *err)
{
	const char *p = text;
	char **hdr = NULL, **units = NULL;
	int nh = -1, nu = 0, rc = 0, rows = 0;
	/* per column: a metric index, a stall index (N_METRICS + j), -1 */
	int *col = NULL, name_col = -1;
	char (*stall_names)[32] = NULL;
	/* launches per kernel, per metric, that gave a number */
	int (*seen)[N_METRICS + KF_PROF_MAX_STALLS] = NULL;
	s->calls = calls;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *line = p;
		p = e ? e + 1 : p + len;
		if (len && line[len - 1] == '\r')
			len--;
		if (nh < 0) {
			if (len < 4 || strncmp(line, "\"ID\"", 4))
				continue;
			nh = split(line, len, &hdr);
			if (nh < 0) {
				rc = kf_err_set(err, KF_EPROTO,
						"ncu: bad header line");
				goto out;
			}
			col = kf_xcalloc((size_t)nh, sizeof(*col));
			stall_names = kf_xcalloc((size_t)nh, 32);
			int n_st = 0;
			for (int i = 0; i < nh; i++) {
				col[i] = -1;
				if (!strcmp(hdr[i], "Kernel Name"))
					name_col = i;
				for (size_t m = 0; m < N_METRICS; m++)
					if (!strcmp(hdr[i], metrics[m].name))
						col[i] = (int)m;
				if (col[i] < 0 && n_st < KF_PROF_MAX_STALLS &&
				    stall_name(hdr[i], stall_names[n_st]))
					col[i] = (int)N_METRICS + n_st++;
			}
			if (name_col < 0) {
				rc = kf_err_set(err, KF_EPROTO,
						"ncu: no \"Kernel Name\" column");
				goto out;
			}
			seen = kf_xcalloc(KF_PROF_MAX_KERNELS, sizeof(*seen));
			continue;
		}
		if (!len || !strncmp(line, "==", 2))
			continue; /* ==PROF== and ==WARNING== lines */
		char **v;
		int n = split(line, len, &v);
		if (n != nh) {
			if (n >= 0)
				free_fields(v, n);
			/* the program's own output between rows */
			if (n < 0 || line[0] != '"')
				continue;
			rc = kf_err_set(err, KF_EPROTO,
					"ncu: a row of %d fields under a "
					"header of %d",
					n, nh);
			goto out;
		}
		if (!v[0][0] && !units) { /* the units line */
			units = v;
			nu = n;
			continue;
		}
		const char *name = v[name_col];
		if (!*name || kf_profile_engine_kernel(name)) {
			free_fields(v, n);
			continue;
		}
		int ki = 0;
		while (ki < s->n && strcmp(s->k[ki].name, name))
			ki++;
		if (ki == s->n) {
			if (s->n == KF_PROF_MAX_KERNELS) {
				free_fields(v, n);
				continue;
			}
			kernel_init(&s->k[s->n++], name);
		}
		struct kf_prof_kernel *k = &s->k[ki];
		k->launches++;
		rows++;
		/* Sums of a launch's columns first: two columns may feed
		 * one field (loads and stores of local memory). */
		double row[N_METRICS + KF_PROF_MAX_STALLS];
		for (size_t m = 0; m < N_METRICS + KF_PROF_MAX_STALLS; m++)
			row[m] = NAN;
		for (int i = 0; i < n; i++) {
			if (col[i] < 0)
				continue;
			double x = value(v[i]);
			if (col[i] < (int)N_METRICS)
				x *= unit_scale(units && i < nu ? units[i]
								: NULL,
						metrics[col[i]].scale);
			add(&row[col[i]], x);
		}
		for (size_t m = 0; m < N_METRICS; m++) {
			/* fields shared by two metrics: one slot, the first */
			size_t first = m;
			for (size_t j = 0; j < m; j++)
				if (metrics[j].off == metrics[m].off) {
					first = j;
					break;
				}
			if (first != m)
				add(&row[first], row[m]);
		}
		for (size_t m = 0; m < N_METRICS; m++) {
			bool dup = false;
			for (size_t j = 0; j < m; j++)
				dup = dup || metrics[j].off == metrics[m].off;
			if (dup || isnan(row[m]))
				continue;
			add(field(k, metrics[m].off), row[m]);
			seen[ki][m]++;
		}
		for (int j = 0; j < KF_PROF_MAX_STALLS; j++) {
			double x = row[N_METRICS + j];
			if (isnan(x))
				continue;
			int si = 0;
			while (si < k->n_stalls &&
			       strcmp(k->stalls[si].name, stall_names[j]))
				si++;
			if (si == k->n_stalls) {
				if (si == KF_PROF_MAX_STALLS)
					continue;
				snprintf(k->stalls[si].name,
					 sizeof(k->stalls[si].name), "%s",
					 stall_names[j]);
				k->n_stalls++;
			}
			k->stalls[si].cycles += x;
			seen[ki][N_METRICS + j]++;
		}
		free_fields(v, n);
	}
	if (nh < 0) {
		rc = kf_err_set(err, KF_EPROTO,
				"ncu: no CSV header (\"ID\",...) in its "
				"output: no kernel was profiled");
		goto out;
	}
	/* Means over launches, but for the time, which is summed. */
	for (int ki = 0; ki < s->n; ki++) {
		struct kf_prof_kernel *k = &s->k[ki];
		for (size_t m = 0; m < N_METRICS; m++) {
			bool dup = false;
			for (size_t j = 0; j < m; j++)
				dup = dup || metrics[j].off == metrics[m].off;
			if (dup || !seen[ki][m] || metrics[m].scale == 1)
				continue;
			*field(k, metrics[m].off) /= seen[ki][m];
		}
		for (int si = 0; si < k->n_stalls; si++)
			k->stalls[si].cycles /= k->launches;
	}
	(void)rows;
out:
	if (hdr)
		free_fields(hdr, nh);
	if (units)
		free_fields(units, nu);
	free(col);
	free(stall_names);
	free(seen);
	return rc;
}
