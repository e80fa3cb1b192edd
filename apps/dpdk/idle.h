/* SPDX-License-Identifier: Apache-2.0 */
/* What a polling lcore does when a poll round found no work. */
#ifndef QD_IDLE_H
#define QD_IDLE_H

#include <stdbool.h>

/* Called once per poll loop with whether it found work: --idle-us sleeps,
 * or a yield when lcores share a CPU. *empty counts the empty polls in a row. */
void qd_idle(unsigned *empty, bool busy);

#endif
