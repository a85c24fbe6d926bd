/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-analyze's --device-lock: the jobs of a batch on one GPU take turns
 * for their solves. Side by side under CUDA MPS their solves shared the
 * device's bandwidth and each ran about four times slower; one at a time,
 * each at full speed while the other jobs read, prepare, compute fields
 * and write, the 16 samples of bench/clinical.sh took 11.4-12.0 s against
 * 12.5-14.0 s (docs/benchmarks.md). The lock is flock(2) on a file that
 * every job names: held by an open file, it is given back when the process
 * ends, however it ends. */
#ifndef VOXFE_CLI_DEVICE_LOCK_H
#define VOXFE_CLI_DEVICE_LOCK_H

/* Opens `path` as a lock file: made (empty) where missing, never written
 * or truncated; a regular file, and neither the input nor the output.
 * Returns its descriptor, or -1 after one line naming the file. */
int cli_device_lock_open(const char *path, const char *input, const char *output);

/* Waits for the lock on `fd` and holds it; returns the seconds waited, or
 * -1 (errno set) where the file system gives no such lock. */
double cli_device_lock_take(int fd);

/* Gives the lock back (the file stays open for the next take). */
void cli_device_lock_give(int fd);

#endif
