/* The temporary file every writer of export/ writes before renaming it over
 * its output, so that a failed write never leaves a partial file (private). */
#ifndef VOXFE_TEMP_FILE_H
#define VOXFE_TEMP_FILE_H

/* Creates "<path>.tmp.XXXXXX" exclusively, as mkstemp does, but with mode
 * 0666 so that the kernel applies the caller's umask (and default ACLs):
 * mkstemp's 0600 would make every exported file private, and reading the
 * umask to fchmod afterwards means changing it, which is process-wide.
 * Returns the descriptor and the malloc'ed name, or -1 with errno set. */
int vox_open_temp(const char *path, char **tmp_out);

#endif
