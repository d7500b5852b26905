/*
 * serve_usage.h: the usage text of `kforge serve`, shared by the CLI's
 * command (tools/kforge_serve.c) and the server executable
 * (tools/kforge-serve.c) that it runs.
 */
#ifndef KFORGE_TOOLS_SERVE_USAGE_H
#define KFORGE_TOOLS_SERVE_USAGE_H

static const char serve_usage_text[] =
    "usage: kforge serve [options]   the reward service for RL trainers\n"
    "\n"
    "Serves kforge's verdicts as rewards over HTTP (docs/api.md): POST\n"
    "/v1/score, /v1/episodes, /v1/openrlhf; GET /v1/health, /v1/stats,\n"
    "/metrics; OpenEnv's /reset, /step, /state, /schema, /metadata,\n"
    "/health and the WebSocket /ws (docs/rl.md, \"OpenEnv\").\n"
    "Runs build/kforge-serve, which needs libmicrohttpd.\n"
    "\n"
    "  --port N             TCP port (default 8471; 0: any free one)\n"
    "  --host ADDR          IPv4 address to listen on (default 127.0.0.1)\n"
    "  --port-file FILE     write the port listened on to FILE\n"
    "  --db FILE            the run store (default kforge.db)\n"
    "  --tasks DIR          problem ids name tasks under DIR only (default "
    "tasks)\n"
    "  --backend host|cuda  where kernels run (default host)\n"
    "  --workers N          evaluations at once (default 2)\n"
    "  --queue N            items waiting at most; more: 503 (default 4096)\n"
    "  --deadline S         longest a request may take (default 600)\n"
    "  --openrlhf-deadline S  /v1/openrlhf's (default 150: OpenRLHF's\n"
    "                       client gives up at 180 s)\n"
    "  --openrlhf-group-size N  /v1/openrlhf: the samples of a prompt\n"
    "                       form groups of N across requests (default:\n"
    "                       those of each request)\n"
    "  --group-wait S       a group split over requests is answered when\n"
    "                       whole or S s after its first item (default 60)\n"
    "  --max-groups N       open groups at most (default 65536)\n"
    "  --max-body BYTES     request body cap; more: 413 (default 8 MiB)\n"
    "  --max-code BYTES     completion or code cap (default 256 KiB)\n"
    "  --client-timeout S   a request body not in after S seconds: 408\n"
    "                       (default 30)\n"
    "  --max-connections N  connections at once (default 4096)\n"
    "  --reward NAME        default reward design (default log_speedup)\n"
    "  --reward-params JSON its parameters, a JSON object\n"
    "  --max-turns N        default turns of an episode (default 4)\n"
    "  --max-episodes N     open episodes at most (default 4096)\n"
    "  --episode-ttl S      idle episodes expire (default 3600)\n"
    "  --openenv-problem ID OpenEnv: the problem of a reset or /step that\n"
    "                       names none (default: they must name one)\n"
    "  --trials N           correctness trials per item (default 6)\n"
    "  --time-cap S         timing budget per item (default 10)\n"
    "  --no-timing          checks only (speedup null, treated as 1)\n"
    "  --call-timeout-ms MS longest one call may take in checks\n"
    "  --mem-limit-mb MB    the host worker's memory\n"
    "  --require-custom-kernel  KernelBench-format problems: a ModelNew\n"
    "                       that builds no extension, or loads after a\n"
    "                       failed build, is rejected (no_custom_kernel)\n"
    "\n"
    "Stops on SIGINT or SIGTERM. Exit status: 0 stopped, 2 bad usage or\n"
    "an error at start.\n";

#endif
