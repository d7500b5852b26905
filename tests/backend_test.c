/* backend_test.c: tests of the backend module. */
#include "harness.h"

KF_TESTS(backend) = {
	KF_TESTS_END,
};
