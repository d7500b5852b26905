/* runner_underreport, done with care: it serves the runner's protocol
 * itself, does the engine's cache flush before every call exactly as the
 * runner would (the value the request names, over the region it names),
 * computes every call honestly and reports 90 % of the time it measured
 * with events. The flush is there, so only the timing could give it away,
 * and on a device the engine's outside view is wall time, whose honest
 * noise under load reaches 0.1 ms + 10 % of a call: a 10 % under-report
 * stays inside it. The corpus expects it to pass: the residual that
 * docs/redteam.md states, kept here so that a tighter bound shows. */
#define FLUSH_AS_RUNNER 1
#include "runner_underreport.cu"
