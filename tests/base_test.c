/* base_test.c: tests of the base module. */
#include "harness.h"

KF_TESTS(base) = {
	KF_TESTS_END,
};
