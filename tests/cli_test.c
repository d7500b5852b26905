/* cli_test.c: tests of the cli module. */
#include "harness.h"

KF_TESTS(cli) = {
	KF_TESTS_END,
};
