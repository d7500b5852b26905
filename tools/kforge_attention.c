/*
 * kforge_attention.c: `kforge attention`, the attention family's variant
 * generator (docs/attention.md): `check` reads and checks specs, `gen`
 * writes a spec's candidate for the cuda or the host backend.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/attention.h>
#include <kforge/base.h>

#include "commands.h"

const char kf_attention_usage[] =
    "usage: kforge attention check SPEC...\n"
    "       kforge attention gen SPEC [-o OUT] [--backend cuda|host]\n"
    "\n"
    "An attention variant's spec (JSON: dtype, head_dim, heads, layout,\n"
    "mask, score_mod, params; docs/attention.md) is checked whole: unknown\n"
    "keys or identifiers, types, head indices out of range, a mask\n"
    "declared causal that is not, head counts that do not divide, a head\n"
    "dim other than 64 or 128 are refused with the file and the field.\n"
    "\n"
    "check  checks each SPEC; prints 'ok SPEC' or the error.\n"
    "gen    writes the candidate that specialises kforge's flash-style\n"
    "       template for SPEC: CUDA (tensor cores, mma.sync) by default,\n"
    "       host C (the same tiles and online softmax, scalar) with\n"
    "       --backend host or an OUT ending in .c; to stdout without -o.\n"
    "Exit status: 0 ok, 1 a spec refused, 2 a usage or file error.\n";

static int gen(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"backend", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	const char *outp = NULL, *backend = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outp = optarg;
			break;
		case 'b':
			backend = optarg;
			break;
		case 'h':
			fputs(kf_attention_usage, stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc)
		return kf_cli_die("attention gen: give one SPEC (kforge "
				  "attention --help)");
	if (!backend) {
		size_t n = outp ? strlen(outp) : 0;
		backend = n > 2 && !strcmp(outp + n - 2, ".c") ? "host" : "cuda";
	}
	if (strcmp(backend, "cuda") && strcmp(backend, "host"))
		return kf_cli_die("attention gen: --backend: '%s' is not cuda "
				  "or host", backend);
	struct kf_attn_spec *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	if (kf_attn_spec_load(argv[optind], &s, &err)) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		return err.code == KF_EINVAL ? 1 : 2;
	}
	char *src = kf_attn_generate(s, backend);
	kf_attn_spec_free(s);
	int rc = 0;
	if (!outp)
		fputs(src, stdout);
	else if (kf_file_write_atomic(outp, src, strlen(src), &err)) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		rc = 2;
	}
	free(src);
	return rc;
}

int kf_cmd_attention(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(kf_attention_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "gen"))
		return gen(argc - 1, argv + 1);
	if (strcmp(argv[1], "check"))
		return kf_cli_die("attention: unknown subcommand '%s' (check "
				  "or gen)", argv[1]);
	if (argc < 3)
		return kf_cli_die("attention check: give one or more SPECs");
	int rc = 0;
	for (int i = 2; i < argc; i++) {
		struct kf_attn_spec *s = NULL;
		struct kf_err err = KF_ERR_INIT;
		if (kf_attn_spec_load(argv[i], &s, &err)) {
			fprintf(stderr, "kforge: %s\n", err.msg);
			if (rc == 0 || err.code != KF_EINVAL)
				rc = err.code == KF_EINVAL ? 1 : 2;
			continue;
		}
		printf("ok %s\n", argv[i]);
		kf_attn_spec_free(s);
	}
	return rc;
}
