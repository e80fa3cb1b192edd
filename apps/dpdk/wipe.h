/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Freeing a frame that may hold keys or plaintext: signaling frames (ADD and
 * UPDATE carry keys and secrets in clear, docs/protocol.md §2) and host data
 * frames. A freed mbuf goes back to its pool with its bytes as they were, in
 * memory the next frame, a core dump or a hugepage file left behind can show;
 * so every path that drops such a frame zeroes it first. Each segment's whole
 * buffer is zeroed (headroom included: a frame trimmed or moved within the
 * buffer leaves bytes outside its data). These frames are rare on the drop
 * paths (control ring full, offload frames from the network port, shutdown),
 * so the cost does not matter.
 */
#ifndef QD_WIPE_H
#define QD_WIPE_H

#include <string.h>

#include <rte_mbuf.h>

static inline void qd_mbuf_wipe(struct rte_mbuf *m)
{
    for (struct rte_mbuf *s = m; s; s = s->next)
        explicit_bzero(s->buf_addr, s->buf_len); /* not elided before the free */
}

static inline void qd_mbuf_free_wiped(struct rte_mbuf *m)
{
    if (!m)
        return;
    qd_mbuf_wipe(m);
    rte_pktmbuf_free(m);
}

#endif
