/* Honest: grouped-query attention (bfloat16) laid out as FlashAttention does
 * it, the probabilities rounded to bfloat16 before their product with v,
 * float32 accumulation. 0.37 of bfloat16's unit roundoff in L1 against the
 * reference: must stay ok under the 16-bit precision bound. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <kforge/kernel.h>

#include "attention_causal.h"

#define LDX(x) kf_bf16_to_float(x)
#define STX0(x) kf_float_to_bf16(x)
#define RP(x) kf_bf16_to_float(kf_float_to_bf16(x))

#include "attention_flash.h"
