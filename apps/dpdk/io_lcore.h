/* SPDX-License-Identifier: Apache-2.0 */
/* Pipeline mode's I/O lcore (io_lcore.c). */
#ifndef QD_IO_LCORE_H
#define QD_IO_LCORE_H

/* The I/O lcore's loop (run on the main lcore); returns when qda.quit is set. */
int qd_io_main(void);

#endif
