/* A small test harness for the plain C ABI tests: pass/fail counters, the status check that
 * every bad-input case makes, byte-pattern poisoning of outputs, and a seeded generator.
 * C99; links against libfp8attn only. */
#ifndef FP8ATTN_TESTS_ABI_HARNESS_H_
#define FP8ATTN_TESTS_ABI_HARNESS_H_

#include <stddef.h>
#include <stdint.h>

#include "fp8attn/fp8attn.h"

/** The byte written over every output before a call that must fail. */
#define ABI_POISON_BYTE 0xA5

/** Records one check. `what` names the case; the rest is a printf-style detail. */
void abi_check(int ok, const char* what, const char* fmt, ...);

/** Returns a fresh error struct with a garbage status and a garbage message, so that a call
 *  that forgets to fill it is caught. */
fp8attn_error abi_fresh_error(void);

/** Checks that a call returned `want`, that `err` says the same, and that the message is
 *  non-empty and contains `needle` (case-sensitive). Prints the message. */
void abi_expect_status(const char* what, int32_t got, int32_t want, const fp8attn_error* err, const char* needle);

/** Fills `n` bytes with `byte`. */
void abi_poison(void* p, size_t n, unsigned char byte);

/** 1 when all `n` bytes equal `byte`. */
int abi_is_poison(const void* p, size_t n, unsigned char byte);

/** Prints "N passed, N failed" and returns the process exit status (0 iff nothing failed). */
int abi_finish(void);

/** The seed: FP8ATTN_TEST_SEED from the environment, or `fallback`. Printed once. */
uint64_t abi_seed(uint64_t fallback);

/** splitmix64: the next 64 random bits of `state`. */
uint64_t abi_random_u64(uint64_t* state);

/** A random finite E4M3 byte with |value| ≤ 3.75 (exponent field 0..8, never NaN). */
unsigned char abi_random_e4m3(uint64_t* state);

/** The value of an E4M3 byte (OCP e4m3fn; NaN for 0x7F/0xFF). */
float abi_e4m3_to_float(unsigned char byte);

#endif /* FP8ATTN_TESTS_ABI_HARNESS_H_ */
