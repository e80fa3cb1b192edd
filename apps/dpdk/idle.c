/* SPDX-License-Identifier: Apache-2.0 */
/* Idle polling: sleep or yield after empty polls (idle.h). */
#include "idle.h"

#include <sched.h>
#include <unistd.h>

#include "options.h"
#include "qd.h"

#define IDLE_POLLS 256
#define YIELD_POLLS 4

/* --idle-us: after IDLE_POLLS empty polls in a row, give the CPU away.
 * Busy-polling (--idle-us 0) with lcores sharing a CPU: yield after a few
 * empty polls, so the lcore with work (the other end of a ring) runs now
 * instead of at the next scheduler tick. */
void qd_idle(unsigned *empty, bool busy)
{
    if (busy) {
        *empty = 0;
    } else if (qda.opt->idle_us) {
        if (++*empty >= IDLE_POLLS) {
            usleep(qda.opt->idle_us);
            *empty = 0;
        }
    } else if (qda.lcores_share_cpu && ++*empty >= YIELD_POLLS) {
        sched_yield();
        *empty = 0;
    }
}
