/* The list behind vox_temp_files_remove (voxfe/temp_files.h), private to
 * the library's writers: a temporary file is added once created and taken
 * off once renamed into place or removed. A name too long for the list, or
 * one more than it holds, is simply not listed (the file is still written
 * and renamed as ever; only a signal could leave it behind). */
#ifndef VOXFE_TEMP_REGISTRY_H
#define VOXFE_TEMP_REGISTRY_H

void vox_temp_register(const char *tmp);
void vox_temp_unregister(const char *tmp);

#endif
