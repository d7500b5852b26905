/* eval_test.c: tests of the eval module. */
#include "harness.h"

KF_TESTS(eval) = {
	KF_TESTS_END,
};
