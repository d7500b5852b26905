/* runner_underreport_slow, reporting four calls in five at 90 % and the
 * fifth at 130 %: the calls it over-reports have the smallest shares of
 * the engine's view, and a lower decile over all calls would be theirs.
 * The judge takes it over the calls that set the median report: rejected,
 * unaccounted_time. */
#define FLUSH_AS_RUNNER 1
#define REPEATS 10
#define OVER_EVERY_FIFTH 1
#include "runner_underreport.cu"
