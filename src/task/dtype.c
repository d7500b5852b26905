/*
 * dtype.c: the element types of task tensors and the names of input
 * distributions, as spelled in task.json and in results.
 */
#include <string.h>

#include <kforge/task.h>

static const char *const dtype_names[KF_DTYPE_COUNT] = {
    [KF_F32] = "float32",   [KF_F64] = "float64", [KF_F16] = "float16",
    [KF_BF16] = "bfloat16", [KF_I32] = "int32",	  [KF_I64] = "int64",
};

/* Bytes per element; float16 and bfloat16 are stored as uint16_t. */
static const size_t dtype_bytes[KF_DTYPE_COUNT] = {
    [KF_F32] = 4,  [KF_F64] = 8, [KF_F16] = 2,
    [KF_BF16] = 2, [KF_I32] = 4, [KF_I64] = 8,
};

const char *kf_dtype_name(enum kf_dtype d)
{
	if ((unsigned)d >= KF_DTYPE_COUNT)
		return NULL;
	return dtype_names[d];
}

int kf_dtype_parse(const char *name, enum kf_dtype *out)
{
	if (!name)
		return KF_EINVAL;
	for (int d = 0; d < KF_DTYPE_COUNT; d++) {
		if (strcmp(name, dtype_names[d]) == 0) {
			*out = (enum kf_dtype)d;
			return 0;
		}
	}
	return KF_EINVAL;
}

size_t kf_dtype_bytes(enum kf_dtype d)
{
	if ((unsigned)d >= KF_DTYPE_COUNT)
		return 0;
	return dtype_bytes[d];
}

bool kf_dtype_is_float(enum kf_dtype d)
{
	return d == KF_F32 || d == KF_F64 || d == KF_F16 || d == KF_BF16;
}

const char *kf_dist_name(enum kf_dist_kind k)
{
	switch (k) {
	case KF_DIST_NORMAL:
		return "normal";
	case KF_DIST_UNIFORM:
		return "uniform";
	case KF_DIST_HEAVY:
		return "heavy";
	case KF_DIST_WIDE:
		return "wide";
	case KF_DIST_INT:
		return "int";
	case KF_DIST_CONST:
		return "const";
	case KF_DIST_LARGE:
		return "large";
	case KF_DIST_DENORMAL:
		return "denormal";
	case KF_DIST_TIES:
		return "ties";
	case KF_DIST_NEGATIVE:
		return "negative";
	case KF_DIST_ZEROS:
		return "zeros";
	case KF_DIST_BITS:
		return "bits";
	}
	return NULL;
}
