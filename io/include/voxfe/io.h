/* SPDX-License-Identifier: BSD-3-Clause */
/* The voxfe netCDF-4 file (docs/file-format.md): models, designs, results. */
#ifndef VOXFE_IO_H
#define VOXFE_IO_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schema version written into the file's `voxfe_schema_version` attribute
 * and checked on read (files of a newer major version are refused). */
#define VOX_SCHEMA_VERSION 1
/* The version of files of heat-conduction models (attribute physics =
 * "heat", variable temperature): readers that predate heat refuse them
 * instead of reading temperatures as displacements. Elasticity files keep
 * VOX_SCHEMA_VERSION. */
#define VOX_SCHEMA_VERSION_HEAT 2
/* The version of files whose optimization problem an older reader would
 * misread: springs, an output vector, an objective other than compliance or
 * load case weights (a compliant mechanism, a weighted multi-load design).
 * Plain files keep their version (1, or 2 for heat). */
#define VOX_SCHEMA_VERSION_OBJECTIVE 3
/* The version of analysis results (stage "analysis", elasticity) whose
 * displacement is stored on the nodes of the non-empty voxels only
 * (dimension bone_node, variable bone_node_index) and whose element fields
 * are over the bone elements (voxfe-analyze's result file): older readers
 * would not find the displacement on the node grid. */
#define VOX_SCHEMA_VERSION_BONE_NODES 4
/* The version of files with design constraints (dimension
 * design_constraint, the volume objective, the history's constraint_value):
 * an older reader would optimize without them. */
#define VOX_SCHEMA_VERSION_CONSTRAINTS 5
/* The newest version this library reads. */
#define VOX_SCHEMA_VERSION_NEWEST VOX_SCHEMA_VERSION_CONSTRAINTS

/* netCDF-C is not thread-safe: do not read or write files from two threads
 * at once, even with separate contexts. */

/* Reads a voxfe model or design file into a zeroed `model`. Errors name the
 * file and the problem: VOX_ERR_IO (missing or unreadable), VOX_ERR_FORMAT
 * (not netCDF, truncated, not a voxfe file, newer schema version,
 * inconsistent content). On error the model is left zeroed. */
vox_status vox_model_read(vox_context *ctx, const char *path, vox_model *model);

/* How a model file stores its floating-point fields (the intensity, the
 * density and its snapshots, the nodal density and the box's
 * displacements); labels and long lists are always deflated. */
typedef struct vox_write_options {
  /* 1: deflated (level 1 after shuffle): a design's density and
   * displacements shrink to about half and two thirds, but netCDF deflates
   * on one thread at about 30 MB/s; 0 (the default): stored as they are,
   * written at the disk's speed (docs/file-format.md) */
  int deflate_fields;
  /* the bytes of each slab in which the large uncompressed fields are
   * written, the disk asked after each to start on it (0, the default: 64
   * MiB; a 1 GB design file's fsync then waits for the last slabs only);
   * the same file whatever the size */
  size_t slab_bytes;
} vox_write_options;

void vox_write_options_default(vox_write_options *options);

/* Writes `model` to `path` as netCDF-4 (chunked and deflated as `options`
 * says; NULL: the defaults); an inconsistent model gives
 * VOX_ERR_INVALID_ARGUMENT. The file is written to a temporary name in the
 * same folder and renamed into place only when complete, so a failure
 * leaves no partial file and an existing file at `path` untouched. */
vox_status vox_model_write_with(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_write_options *options);
/* The same with the default options. */
vox_status vox_model_write(vox_context *ctx, const char *path, const vox_model *model);

/* Why `path` cannot be written as an output, for messages ("a symbolic
 * link", "a FIFO (named pipe)", "a folder", ...), or NULL when it can: a new
 * name, a regular file (replaced by a rename, atomically) or a character
 * device such as /dev/null (written through, never replaced). Every writer
 * of the library refuses the others: a rename would replace the link, the
 * pipe or the device node itself. Symbolic links are refused rather than
 * followed, so that an output never lands somewhere its name does not say. */
const char *vox_output_refusal(const char *path);

/* A large buffer of `bytes` that is filled in a parallel loop (and then
 * written, as the writers' conversions and voxfe-analyze's fields are):
 * 2 MiB-aligned and offered to transparent huge pages, so that its first
 * touch takes a few page faults rather than one per 4 KiB (the 150 MB of a
 * clinical sample's displacement); NULL when out of memory; free() frees. */
void *vox_alloc_buffer(size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
