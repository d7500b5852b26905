/* clock.c: monotonic nanoseconds for deadlines and timings, the calling
 * thread's CPU time (host timings), UTC stamps. */
#include <time.h>

#include <kforge/base.h>

uint64_t kf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t kf_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

char *kf_utc_iso8601(void)
{
	time_t now = time(NULL);
	struct tm tm;
	char buf[32];
	gmtime_r(&now, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return kf_xstrdup(buf);
}
