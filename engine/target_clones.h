/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the compiler supports it, hot loops are also built for AVX2 and FMA
 * (x86-64-v3) and the best clone is picked at load time (private). A file
 * whose clones must give the same bits is compiled with -ffp-contract=off
 * (engine/CMakeLists.txt). */
#ifndef VOXFE_TARGET_CLONES_H
#define VOXFE_TARGET_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define HOT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HOT_CLONES
#endif

#endif
