/* SPDX-License-Identifier: MIT */
/*
 * The op library's kernels a unit test runs an op on, by NPU_FWSIM_ISA:
 * 0 the host's widest, 1 AVX2, 2 the portable loops (each path must give
 * the same answers).
 */
#ifndef FWSIM_ISA_H
#define FWSIM_ISA_H

#include <stdlib.h>

#define FWSIM_ISAS	3

static inline void fwsim_isa(unsigned int k)
{
	if (!k)
		unsetenv("NPU_FWSIM_ISA");
	else
		setenv("NPU_FWSIM_ISA", k == 1 ? "avx2" : "portable", 1);
}

#endif /* FWSIM_ISA_H */
