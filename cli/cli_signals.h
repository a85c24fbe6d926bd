/* SPDX-License-Identifier: BSD-3-Clause */
/* The programs' signals. SIGINT, SIGTERM and SIGHUP end a program as they
 * always did, by the signal, but first remove the temporary files of the
 * writes under way (voxfe/temp_files.h), so that no "<file>.tmp.*" is left
 * beside an output; kill -9 cannot be caught, and leaves one at most, never
 * a damaged output (every file is renamed into place when complete).
 *
 * voxfe-optimize defers SIGINT and SIGTERM instead (cli_signals_defer): the
 * handler only notes the first one, the optimizer stops after the design
 * iteration under way, and the program writes its checkpoint and the
 * design so far and exits with cli_signal_exit_status; a second one ends
 * the program at once, as above. The handlers do nothing but set a flag,
 * unlink the listed files, restore the default action and raise the signal
 * again: async-signal-safe calls only. */
#ifndef VOXFE_CLI_SIGNALS_H
#define VOXFE_CLI_SIGNALS_H

/* Installs the handlers (and removes the listed temporary files at exit
 * too); called by cli_context, once is enough. */
void cli_signals_install(void);

/* From now on SIGINT and SIGTERM are noted rather than ending the program
 * (the first of them; a second ends it). */
void cli_signals_defer(void);

/* The signal noted since cli_signals_defer, 0 for none. */
int cli_signal_received(void);

/* The exit status of a program that stopped on `signal`: 128 + its number,
 * as a shell reports a program the signal ended (130 for SIGINT, 143 for
 * SIGTERM). */
int cli_signal_exit_status(int signal);

#endif
